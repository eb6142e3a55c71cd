// libFuzzer target: any bytes as an Ethernet frame. parse_frame() must answer every shape of them
// without reading outside the frame, and whatever it accepts must survive build_frame() + a second
// parse unchanged (the builder and the parser agree on every field).
//
// The first input byte selects fix-ups so that mutations get past the checksums to the transport
// headers: bit 0 re-seals the ICRC, bit 1 recomputes the IPv4 header checksum. The rest is the frame.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/endian.h"
#include "testbench/transport/packet_compare.h"
#include "transport/icrc.h"
#include "transport/roce_packet.h"

using namespace hcaemu;
using namespace hcaemu::transport;

namespace {

// Where the IP packet of an Ethernet [+ 802.1Q] frame starts and ends; false when not IP or short.
bool ip_packet_of(const std::vector<uint8_t>& f, size_t* begin, size_t* end, bool* v4) {
  if (f.size() < 14) return false;
  size_t l3 = 14;
  uint16_t type = load_be16(&f[12]);
  if (type == 0x8100) {
    if (f.size() < 18) return false;
    type = load_be16(&f[16]);
    l3 = 18;
  }
  size_t len = 0;
  if (type == 0x0800 && f.size() >= l3 + 20) {
    len = load_be16(&f[l3 + 2]);
    *v4 = true;
  } else if (type == 0x86dd && f.size() >= l3 + 40) {
    len = 40 + size_t(load_be16(&f[l3 + 4]));
    *v4 = false;
  } else {
    return false;
  }
  if (l3 + len > f.size()) return false;
  *begin = l3;
  *end = l3 + len;
  return true;
}

void fix_up(std::vector<uint8_t>& f, uint8_t mode) {
  size_t begin = 0, end = 0;
  bool v4 = false;
  if (!ip_packet_of(f, &begin, &end, &v4)) return;
  if ((mode & 2) && v4) {
    const size_t ihl = size_t(f[begin] & 0x0f) * 4;
    if (ihl >= 20 && begin + ihl <= end) {
      store_be16(&f[begin + 10], 0);
      uint32_t sum = 0;
      for (size_t i = 0; i + 1 < ihl; i += 2) sum += load_be16(&f[begin + i]);
      while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
      store_be16(&f[begin + 10], uint16_t(~sum));
    }
  }
  if ((mode & 1) && end - begin >= 4) {
    const uint32_t icrc = icrc_of_ip_packet({f.data() + begin, end - begin});
    store_le32(&f[end - 4], icrc);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<uint8_t> frame(data + 1, data + size);
  fix_up(frame, data[0]);

  (void)is_roce_v2(frame);
  (void)compute_icrc(frame);
  const ParseResult first = parse_frame(frame);
  (void)parse_error_name(first.error);
  if (first.error != ParseError::kNone) return 0;
  if (!is_roce_v2(frame)) std::abort();

  const std::vector<uint8_t> rebuilt = build_frame(first.packet);
  if (rebuilt.empty()) std::abort();
  const ParseResult second = parse_frame(rebuilt);
  if (second.error != ParseError::kNone) {
    std::fprintf(stderr, "rebuilt frame rejected: %s\n", parse_error_name(second.error));
    std::abort();
  }
  const std::string diff = testing::packet_diff(first.packet, second.packet);
  if (!diff.empty()) {
    std::fprintf(stderr, "round trip changed: %s\n", diff.c_str());
    std::abort();
  }
  return 0;
}
