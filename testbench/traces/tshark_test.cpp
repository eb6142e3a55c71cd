// Wireshark as the outside judge of our frames: a pcap written by PcapWriter with a mix of RoCEv2
// traffic (IPv4, IPv6, 802.1Q) is dissected by tshark, which must see InfiniBand in every frame
// with the opcode, PSN, QP and extension header fields we built, good IPv4 header and IPv6 UDP
// checksums, the ICRC where we put it, and no malformed packet or expert warning/error.
//
// tshark (Debian package tshark, installed by scripts/install-deps.sh) must be on PATH; the test
// fails when it is not. Wireshark's InfiniBand dissector (4.0) shows the ICRC but has no option to
// verify it: icrc_test.cpp checks ours against a frame a ConnectX-4 Lx sent.
//
// Wireshark's RPC-over-RDMA heuristic runs on every SEND payload and throws on payloads shorter
// than its header (a Wireshark quirk, real traffic trips it too), so that protocol is disabled.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/endian.h"
#include "traces/pcap_writer.h"
#include "transport/icrc.h"
#include "transport/roce_packet.h"

namespace hcaemu::traces {
namespace {

using namespace hcaemu::transport;

std::string find_tshark() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/tshark";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// Runs a shell command, returns its standard output; *status gets the exit status.
std::string run(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int rc = pclose(pipe);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::stringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

// The fields asked of tshark, in column order.
const std::vector<std::string> kFields = {
    "frame.number", "frame.protocols", "vlan.id", "ip.src", "ipv6.src", "ip.checksum.status",
    "udp.checksum.status", "udp.dstport", "infiniband.bth.opcode", "infiniband.bth.se",
    "infiniband.bth.m", "infiniband.bth.a", "infiniband.bth.p_key", "infiniband.bth.destqp",
    "infiniband.bth.psn", "infiniband.bth.padcnt", "infiniband.bth.tver", "infiniband.reth.va",
    "infiniband.reth.r_key", "infiniband.reth.dmalen", "infiniband.aeth.syndrome",
    "infiniband.aeth.msn", "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
    "infiniband.atomicacketh.origremdt", "infiniband.deth.q_key", "infiniband.deth.srcqp",
    "infiniband.invariant.crc", "_ws.malformed", "_ws.expert.severity", "_ws.expert.message",
};

using Row = std::map<std::string, std::string>;

// A field's first occurrence (0x.. or decimal); one tshark left empty fails the check it is in.
uint64_t num(const Row& row, const std::string& field) {
  const std::vector<std::string> values = split(row.at(field), ',');
  if (values.empty() || values.front().empty()) {
    ADD_FAILURE() << "tshark gave no " << field;
    return ~uint64_t(0);
  }
  return std::strtoull(values.front().c_str(), nullptr, 0);
}

struct Traffic {
  std::vector<uint8_t> data = std::vector<uint8_t>(4096);
  std::vector<RocePacket> packets;

  Traffic() {
    for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 13 + 1);
    const Gid a4 = gid_from_ipv4(0x0a000001), b4 = gid_from_ipv4(0x0a000002);
    const Gid a6 = {0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    const Gid b6 = {0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    auto add = [&](uint8_t op, bool v6, bool vlan, uint32_t psn, size_t payload) -> RocePacket& {
      RocePacket k;
      k.dst_mac = {0x02, 0, 0, 0, 0, 0x0b};
      k.src_mac = {0x02, 0, 0, 0, 0, 0x0a};
      if (vlan) k.vlan_tci = uint16_t((3u << 13) | 42);
      k.src_gid = v6 ? a6 : a4;
      k.dst_gid = v6 ? b6 : b4;
      k.traffic_class = 0x68;
      k.flow_label = v6 ? 0x1f00d : 0;
      k.udp_sport = uint16_t(0xc000 + psn % 64);
      k.opcode = op;
      k.dest_qp = 0x000123;
      k.psn = psn;
      k.ack_req = carries(op, hdr::kLast) && !carries(op, hdr::kResponse);
      k.solicited = op == opcode::kRcSendOnly;
      k.payload = std::span<const uint8_t>(data).first(payload);
      packets.push_back(k);
      return packets.back();
    };
    add(opcode::kRcSendOnly, false, false, 1, 13);
    add(opcode::kRcRdmaWriteFirst, false, false, 2, 1024).reth = {0x7f0000001000, 0x1234, 2100};
    add(opcode::kRcRdmaWriteMiddle, false, false, 3, 1024);
    add(opcode::kRcRdmaWriteLast, false, false, 4, 52);
    add(opcode::kRcAcknowledge, false, false, 4, 0).aeth = {aeth_ack(kAethCreditsInvalid), 2};
    add(opcode::kRcRdmaReadRequest, true, false, 5, 0).reth = {0x10000, 0xabcd, 3000};
    add(opcode::kRcRdmaReadResponseFirst, true, false, 5, 1024).aeth = {aeth_ack(8), 3};
    add(opcode::kRcRdmaReadResponseMiddle, true, false, 6, 1024);
    add(opcode::kRcRdmaReadResponseLast, true, false, 7, 952).aeth = {aeth_ack(8), 3};
    add(opcode::kRcRdmaReadResponseOnly, false, true, 8, 2).aeth = {aeth_ack(1), 4};
    add(opcode::kRcAcknowledge, false, true, 9, 0).aeth = {aeth_nak(NakCode::kPsnSequenceError), 4};
    add(opcode::kRcAcknowledge, true, true, 9, 0).aeth = {aeth_rnr_nak(14), 4};
    add(opcode::kRcCompareSwap, true, true, 10, 0).atomic = {0x2000, 0x77, 0x1111, 0x2222};
    RocePacket& ack = add(opcode::kRcAtomicAcknowledge, true, true, 10, 0);
    ack.aeth = {aeth_ack(4), 5};
    ack.atomic_ack = 0x2222;
    add(opcode::kRcFetchAdd, false, false, 11, 0).atomic = {0x2008, 0x77, 5, 0};
    add(opcode::kRcSendOnlyImm, true, false, 12, 64).immediate = 0x01020304;
    add(opcode::kRcSendOnlyInvalidate, true, false, 13, 33).invalidate_rkey = 0x5555;
    add(opcode::kRcRdmaWriteOnlyImm, false, false, 14, 7).reth = {0x3000, 0x99, 7};
    add(opcode::kUdSendOnly, false, false, 100, 256).deth = {0x11111111, 0x000456};
    add(opcode::kUdSendOnlyImm, true, true, 101, 40).deth = {0x22222222, 0x000457};
    // XRC: requests with an XRCETH, responses as RC's.
    constexpr uint8_t x = opcode::kXrcBase;
    add(x + opcode::kRcSendOnly, false, false, 200, 100).xrc_srqn = 0x000777;
    RocePacket& xw = add(x + opcode::kRcRdmaWriteFirst, true, false, 201, 1024);
    xw.xrc_srqn = 0x000778;
    xw.reth = {0x4000, 0x88, 1500};
    add(x + opcode::kRcRdmaWriteLast, true, false, 202, 476).xrc_srqn = 0x000778;
    add(x + opcode::kRcAcknowledge, true, false, 202, 0).aeth = {aeth_ack(kAethCreditsInvalid), 7};
    RocePacket& xr = add(x + opcode::kRcRdmaReadRequest, false, false, 203, 0);
    xr.xrc_srqn = 0x000779;
    xr.reth = {0x5000, 0x89, 64};
    add(x + opcode::kRcRdmaReadResponseOnly, false, false, 203, 64).aeth = {aeth_ack(2), 8};
    RocePacket& xa = add(x + opcode::kRcFetchAdd, false, false, 204, 0);
    xa.xrc_srqn = 0x00077a;
    xa.atomic = {0x6000, 0x8a, 3, 0};
    // DC (hcaemu's encoding): a request with its DCETH and an ACK.
    add(opcode::kDcBase + opcode::kRcSendOnly, false, false, 300, 64).dceth = {0x0badc0de, true, 0x000123};
    add(opcode::kDcBase + opcode::kRcAcknowledge, true, false, 300, 0).aeth = {aeth_ack(kAethCreditsInvalid), 1};
  }
};

TEST(Tshark, DissectsOurRoceV2Frames) {
  const std::string tshark = find_tshark();
  ASSERT_FALSE(tshark.empty()) << "tshark is not on PATH: install it (apt-get install tshark, or "
                                  "scripts/install-deps.sh) - this test needs Wireshark's dissectors";

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hcaemu_tshark_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "wireshark-config");  // no personal preferences
  const std::string pcap = (dir / "roce.pcap").string();

  Traffic traffic;
  std::vector<std::vector<uint8_t>> frames;
  {
    std::string error;
    auto writer = PcapWriter::open(pcap, &error);
    ASSERT_NE(writer, nullptr) << error;
    uint64_t t_ps = 0;
    for (const RocePacket& k : traffic.packets) {
      frames.push_back(build_frame(k));
      ASSERT_FALSE(frames.back().empty()) << opcode_name(k.opcode);
      writer->write(t_ps, frames.back());
      t_ps += 1'250'000;  // 1.25 us
    }
    ASSERT_EQ(writer->frames(), frames.size());
  }

  std::string command = "WIRESHARK_CONFIG_DIR='" + (dir / "wireshark-config").string() + "' '" + tshark +
                        "' -r '" + pcap + "' -n -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE"
                        " --disable-protocol rpcordma -T fields -E separator='|' -E occurrence=a";
  for (const std::string& f : kFields) command += " -e " + f;
  command += " 2>/dev/null";
  int status = 0;
  const std::string out = run(command, &status);
  ASSERT_EQ(status, 0) << command;
  std::vector<std::string> lines = split(out, '\n');
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  ASSERT_EQ(lines.size(), frames.size()) << out;

  constexpr uint64_t kSeverityWarn = 0x00600000;  // Wireshark PI_WARN; PI_ERROR is 0x00800000
  for (size_t i = 0; i < frames.size(); ++i) {
    const RocePacket& k = traffic.packets[i];
    const std::vector<uint8_t>& f = frames[i];
    const bool v6 = !is_ipv4_mapped(k.src_gid);
    SCOPED_TRACE(::testing::Message() << "frame " << i + 1 << " " << opcode_name(k.opcode)
                                      << (v6 ? " ipv6" : " ipv4") << (k.vlan_tci ? " vlan" : "")
                                      << "\n  tshark: " << lines[i]);
    std::vector<std::string> cols = split(lines[i], '|');
    ASSERT_GE(cols.size(), kFields.size());
    Row row;
    for (size_t c = 0; c < kFields.size(); ++c) row[kFields[c]] = cols[c];

    EXPECT_EQ(num(row, "frame.number"), i + 1);
    EXPECT_NE(row["frame.protocols"].find(":udp:infiniband"), std::string::npos);
    EXPECT_EQ(row["_ws.malformed"], "");
    for (const std::string& sev : split(row["_ws.expert.severity"], ',')) {
      EXPECT_LT(std::strtoull(sev.c_str(), nullptr, 0), kSeverityWarn) << row["_ws.expert.message"];
    }
    // L2-L4
    if (k.vlan_tci) {
      EXPECT_EQ(num(row, "vlan.id"), *k.vlan_tci & 0xfffu);
    }
    if (v6) {
      EXPECT_EQ(row["ipv6.src"], "fd00::1");
      EXPECT_EQ(num(row, "udp.checksum.status"), 1u);  // good
    } else {
      EXPECT_EQ(row["ip.src"], "10.0.0.1");
      EXPECT_EQ(num(row, "ip.checksum.status"), 1u);   // good
      EXPECT_EQ(num(row, "udp.checksum.status"), 3u);  // not present (0)
    }
    EXPECT_EQ(num(row, "udp.dstport"), 4791u);
    // BTH
    EXPECT_EQ(num(row, "infiniband.bth.opcode"), k.opcode);
    EXPECT_EQ(num(row, "infiniband.bth.se"), k.solicited ? 1u : 0u);
    EXPECT_EQ(num(row, "infiniband.bth.m"), k.mig_req ? 1u : 0u);
    EXPECT_EQ(num(row, "infiniband.bth.a"), k.ack_req ? 1u : 0u);
    EXPECT_EQ(num(row, "infiniband.bth.p_key"), k.pkey);
    EXPECT_EQ(num(row, "infiniband.bth.destqp"), k.dest_qp);
    EXPECT_EQ(num(row, "infiniband.bth.psn"), k.psn);
    EXPECT_EQ(num(row, "infiniband.bth.padcnt"), (4 - k.payload.size() % 4) % 4);
    EXPECT_EQ(num(row, "infiniband.bth.tver"), 0u);
    const uint32_t icrc = compute_icrc(f);
    EXPECT_EQ(load_le32(&f[f.size() - 4]), icrc);
    // Wireshark 4.0 names the XRC opcodes but leaves what follows their BTH undissected ("vendor
    // specific", no ICRC field): for those the checks above are all it can give.
    if (k.opcode >= opcode::kXrcBase && k.opcode < opcode::kXrcBase + 0x18) continue;
    // DC's opcodes are manufacturer-specific (hcaemu's encoding): Wireshark shows the BTH alone.
    if (k.opcode >= opcode::kDcBase) continue;
    // The ICRC: Wireshark reads the last four bytes as a big-endian number.
    EXPECT_EQ(num(row, "infiniband.invariant.crc"), __builtin_bswap32(icrc));
    const uint16_t h = headers_of(k.opcode);
    if (h & hdr::kReth) {
      EXPECT_EQ(num(row, "infiniband.reth.va"), k.reth.va);
      EXPECT_EQ(num(row, "infiniband.reth.r_key"), k.reth.rkey);
      EXPECT_EQ(num(row, "infiniband.reth.dmalen"), k.reth.dma_length);
    }
    if (h & hdr::kAtomicEth) {  // Wireshark shows the AtomicETH VA and R_Key as reth.va/r_key
      EXPECT_EQ(num(row, "infiniband.reth.va"), k.atomic.va);
      EXPECT_EQ(num(row, "infiniband.reth.r_key"), k.atomic.rkey);
      EXPECT_EQ(num(row, "infiniband.atomiceth.swapdt"), k.atomic.swap_add);
      EXPECT_EQ(num(row, "infiniband.atomiceth.cmpdt"), k.atomic.compare);
    }
    if (h & hdr::kAeth) {
      EXPECT_EQ(num(row, "infiniband.aeth.syndrome"), k.aeth.syndrome);
      EXPECT_EQ(num(row, "infiniband.aeth.msn"), k.aeth.msn);
    } else {
      EXPECT_EQ(row["infiniband.aeth.syndrome"], "");
    }
    if (h & hdr::kAtomicAckEth) {
      EXPECT_EQ(num(row, "infiniband.atomicacketh.origremdt"), k.atomic_ack);
    }
    if (h & hdr::kDeth) {
      EXPECT_EQ(num(row, "infiniband.deth.q_key"), k.deth.qkey);
      EXPECT_EQ(num(row, "infiniband.deth.srcqp"), k.deth.src_qp);
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hcaemu::traces
