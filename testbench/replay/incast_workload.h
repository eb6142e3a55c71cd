#pragma once
// The N-to-1 incast the replay tests share: `senders` hosts each WRITE `messages` x `bytes` over RC
// (MTU 4096) to the last host, as workload JSON.
#include <string>

namespace hcaemu::replay {

inline std::string incast_workload_json(int senders, int messages, int bytes) {
  std::string json = R"({"format": "hcareplay-workload/1", "hosts": [)";
  for (int i = 0; i <= senders; ++i)
    json += std::string(i ? "," : "") + R"({"name": "h)" + std::to_string(i) + R"(", "ip": "10.0.0.)" +
            std::to_string(i + 1) + "\"}";
  json += R"(], "qps": [)";
  for (int i = 0; i < senders; ++i) {
    json += std::string(i ? "," : "") + R"({"host": "h)" + std::to_string(i) + R"(", "peer": "h)" +
            std::to_string(senders) + R"(", "service": "rc", "mtu": 4096, "ops": [)";
    for (int m = 0; m < messages; ++m)
      json += std::string(m ? "," : "") + R"({"op": "write", "bytes": )" + std::to_string(bytes) + "}";
    json += "]}";
  }
  return json + "]}";
}

}  // namespace hcaemu::replay
