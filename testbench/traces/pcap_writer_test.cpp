// PcapWriter: what it writes reads back through libpcap with nanosecond model-time stamps.
#include "traces/pcap_writer.h"

#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

namespace hcaemu::traces {
namespace {

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("hcaemu_") + std::to_string(getpid()) + "_" + name)).string();
}

TEST(PcapWriter, FramesReadBackWithNanosecondModelTime) {
  const std::string path = temp_path("writer.pcap");
  std::vector<uint8_t> a(60, 0xaa), b(1514, 0xbb), c(70000, 0xcc);
  {
    std::string error;
    auto w = PcapWriter::open(path, &error);
    ASSERT_NE(w, nullptr) << error;
    w->write(0, a);
    w->write(1'234'567'890'123'456ull, b);  // 1234.567890123456 s of model time
    w->write(999, c);                       // sub-nanosecond picoseconds are dropped
    w->flush();
    EXPECT_EQ(w->frames(), 3u);
  }
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  ASSERT_NE(p, nullptr) << err;
  EXPECT_EQ(pcap_datalink(p), DLT_EN10MB);
  EXPECT_EQ(pcap_get_tstamp_precision(p), PCAP_TSTAMP_PRECISION_NANO);
  EXPECT_EQ(pcap_snapshot(p), 65535);
  struct Want { const std::vector<uint8_t>* frame; long sec; long nsec; };
  const Want wants[] = {{&a, 0, 0}, {&b, 1234, 567890123}, {&c, 0, 0}};
  for (const Want& want : wants) {
    pcap_pkthdr* h = nullptr;
    const u_char* data = nullptr;
    ASSERT_EQ(pcap_next_ex(p, &h, &data), 1);
    EXPECT_EQ(h->ts.tv_sec, want.sec);
    EXPECT_EQ(h->ts.tv_usec, want.nsec);
    EXPECT_EQ(h->len, want.frame->size());
    EXPECT_EQ(h->caplen, std::min<size_t>(want.frame->size(), 65535));
    EXPECT_TRUE(std::equal(data, data + h->caplen, want.frame->begin()));
  }
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  EXPECT_EQ(pcap_next_ex(p, &h, &data), PCAP_ERROR_BREAK);  // end of file
  pcap_close(p);
  std::filesystem::remove(path);
}

// Issue 14: a guest flooding the wire grew the capture without bound (the host's disk). With a
// limit the file stops at it, whole records only, and the frames past it are counted.
TEST(PcapWriter, StopsAtItsSizeLimitAndCountsTheRest) {
  const std::string path = temp_path("limit.pcap");
  const std::vector<uint8_t> frame(1000, 0x5a);
  {
    std::string error;
    auto w = PcapWriter::open(path, &error);
    ASSERT_NE(w, nullptr) << error;
    w->set_limit(10 * 1024);
    for (int i = 0; i < 100; ++i) w->write(uint64_t(i) * 1000, frame);
    EXPECT_EQ(w->frames(), 10u) << "24 + 10 x (16 + 1000) bytes fit in 10 KiB";
    EXPECT_EQ(w->frames_over_limit(), 90u);
  }
  EXPECT_EQ(std::filesystem::file_size(path), 24u + 10 * 1016);
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  ASSERT_NE(p, nullptr) << err;
  int read = 0;
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  while (pcap_next_ex(p, &h, &data) == 1) ++read;
  EXPECT_EQ(read, 10) << "a well-formed file of the frames it took";
  pcap_close(p);
  std::filesystem::remove(path);
}

TEST(PcapWriter, OpenFailureSaysWhy) {
  std::string error;
  auto w = PcapWriter::open("/nonexistent-dir-hcaemu/x.pcap", &error);
  EXPECT_EQ(w, nullptr);
  EXPECT_NE(error.find("/nonexistent-dir-hcaemu/x.pcap"), std::string::npos) << error;
  EXPECT_EQ(PcapWriter::open("/nonexistent-dir-hcaemu/x.pcap", nullptr), nullptr);
}

}  // namespace
}  // namespace hcaemu::traces
