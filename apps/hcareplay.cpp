// hcareplay: the performance-modelling front end (issue 13). This step reads its inputs: packet
// captures rebuilt into hosts, queue pairs and messages, and the workload format every input is
// lowered to. Thin: the work is replay/.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "replay/inspect.h"
#include "replay/reconstruct.h"
#include "replay/workload.h"

namespace {

using namespace hcaemu::replay;

constexpr const char* kUsage = R"(Usage: hcareplay inspect [--unmapped N] INPUT
       hcareplay lower INPUT -o WORKLOAD.json
       hcareplay --help

INPUT is a packet capture of RoCEv2 traffic (pcap or pcapng, Ethernet; IPv4 or IPv6, VLAN tags,
UDP port 4791, any MTU) or a workload file (JSON, format hcareplay-workload/1; docs/replay.md).

Commands:
  inspect INPUT   print what was reconstructed: hosts, queue pairs, message counts by opcode and
                  size, think-time statistics, ACKs/NAKs/retransmissions, and every frame that is
                  not part of a message with the reason (a workload: its hosts, QPs and operations)
  lower INPUT     write INPUT as a workload file: each message an operation posted at its first
                  packet's time, with its think time after the QP's previous completion

Options:
  --unmapped N    list at most N unmapped frames (default 20; the counts by reason are complete)
  -o FILE         where lower writes the workload
  -h, --help      show this help and exit

Exit status: 0 on success, 1 when INPUT cannot be read or is malformed (the message names the
file and the frame, or the place in the JSON), 2 on a usage error.
)";

int usage_error(const std::string& what) {
  std::cerr << "hcareplay: " << what << "\n(see hcareplay --help)\n";
  return 2;
}

bool looks_like_json(const std::string& path) {
  std::ifstream in(path);
  char c = 0;
  while (in.get(c))
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '{';
  return false;
}

// The input as a reconstruction (a capture) or a workload; false with a message on error.
bool load(const std::string& path, std::optional<Reconstruction>& capture, std::optional<Workload>& workload) {
  std::string error;
  if (looks_like_json(path)) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    workload = parse_workload(text.str(), &error);
    if (!workload) std::cerr << "hcareplay: " << path << ": " << error << "\n";
    return workload.has_value();
  }
  capture = reconstruct_capture(path, &error);
  if (!capture) std::cerr << "hcareplay: " << error << "\n";
  return capture.has_value();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage_error("no command");
  if (args[0] == "-h" || args[0] == "--help") {
    std::cout << kUsage;
    return 0;
  }
  const std::string command = args[0];
  std::string input, output;
  size_t max_unmapped = 20;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--unmapped" || args[i] == "-o") {
      if (i + 1 == args.size()) return usage_error(args[i] + " needs a value");
      if (args[i] == "-o") {
        output = args[++i];
        continue;
      }
      try {
        max_unmapped = std::stoul(args[++i]);
      } catch (const std::exception&) {
        return usage_error("--unmapped needs a number");
      }
    } else if (!args[i].empty() && args[i][0] == '-') {
      return usage_error("unknown option " + args[i]);
    } else if (input.empty()) {
      input = args[i];
    } else {
      return usage_error("one INPUT only");
    }
  }
  if (command != "inspect" && command != "lower") return usage_error("unknown command " + command);
  if (input.empty()) return usage_error(command + " needs an INPUT");
  std::optional<Reconstruction> capture;
  std::optional<Workload> workload;
  if (!load(input, capture, workload)) return 1;
  if (command == "inspect") {
    if (capture) print_capture(std::cout, *capture, max_unmapped);
    else print_workload(std::cout, *workload);
    return 0;
  }
  if (output.empty()) return usage_error("lower needs -o WORKLOAD.json");
  std::ofstream out(output);
  out << workload_json(capture ? lower(*capture) : *workload);
  if (!out) {
    std::cerr << "hcareplay: cannot write " << output << "\n";
    return 1;
  }
  return 0;
}
