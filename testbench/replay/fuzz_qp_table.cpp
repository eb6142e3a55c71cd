// libFuzzer over hcaemu's QP table as hcareplay reads it (traces/qp_table.h): any bytes give a
// table or an error, never a crash; a table that reads is applied to a small capture whose hosts
// are its own addresses, and the workload that comes out must read back (lowering never writes a
// workload the parser refuses).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "replay/trace_timing.h"
#include "replay/workload.h"
#include "traces/qp_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcaemu;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::string error;
  const auto table = traces::read_qp_table(in, "fuzz.qps.csv", &error);
  if (!table || table->empty()) return 0;
  replay::Reconstruction capture;
  for (const traces::QpRecord& r : *table) {
    if (capture.hosts.size() == 4) break;
    replay::Host h;
    h.gid = r.address;
    h.mac = r.mac;
    h.name = "h" + std::to_string(capture.hosts.size());
    bool seen = false;
    for (const replay::Host& other : capture.hosts) seen |= other.gid == h.gid;
    if (!seen && (h.mac[0] & 1) == 0) capture.hosts.push_back(h);
  }
  if (capture.hosts.size() < 2 ||
      transport::is_ipv4_mapped(capture.hosts[0].gid) != transport::is_ipv4_mapped(capture.hosts[1].gid))
    return 0;
  for (const traces::QpRecord& r : *table) {
    replay::QueuePair qp;
    qp.host = 0;
    qp.peer_host = 1;
    qp.qpn = r.qpn;
    qp.peer_qpn = r.remote_qpn;
    capture.queue_pairs.push_back(qp);
    replay::Message m;
    m.qp = capture.queue_pairs.size() - 1;
    m.bytes = 64;
    m.complete = true;
    m.first_ns = r.time_ps / 1000 + 1;
    capture.messages.push_back(m);
    if (capture.queue_pairs.size() == 64) break;
  }
  replay::apply_qp_table(capture, *table);
  const replay::Workload w = replay::lower(capture);
  if (!replay::parse_workload(replay::workload_json(w), &error)) __builtin_trap();
  return 0;
}
