#include "traces/pcap_writer.h"

#include <pcap/pcap.h>

#include <algorithm>

namespace hcaemu::traces {
namespace {
constexpr int kSnapLength = 65535;
constexpr uint64_t kPsPerNs = 1000;
constexpr uint64_t kNsPerSecond = 1000000000;
}  // namespace

// libpcap's two handles: a "dead" capture that only carries the link type, snapshot length and
// timestamp precision, and the dump file written through it.
struct PcapWriter::Handles {
  pcap_t* pcap = nullptr;
  pcap_dumper_t* dumper = nullptr;
  ~Handles() {
    if (dumper) pcap_dump_close(dumper);  // flushes
    if (pcap) pcap_close(pcap);
  }
};

PcapWriter::PcapWriter(std::unique_ptr<Handles> handles) : handles_(std::move(handles)) {}
PcapWriter::~PcapWriter() = default;

std::unique_ptr<PcapWriter> PcapWriter::open(const std::string& path, std::string* error) {
  auto handles = std::make_unique<Handles>();
  handles->pcap = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, kSnapLength, PCAP_TSTAMP_PRECISION_NANO);
  if (!handles->pcap) {
    if (error) *error = "pcap_open_dead_with_tstamp_precision failed";
    return nullptr;
  }
  handles->dumper = pcap_dump_open(handles->pcap, path.c_str());
  if (!handles->dumper) {
    if (error) *error = pcap_geterr(handles->pcap);  // libpcap names the file
    return nullptr;
  }
  return std::unique_ptr<PcapWriter>(new PcapWriter(std::move(handles)));
}

void PcapWriter::write(uint64_t model_time_ps, std::span<const uint8_t> frame) {
  const uint64_t ns = model_time_ps / kPsPerNs;
  pcap_pkthdr header{};
  header.ts.tv_sec = time_t(ns / kNsPerSecond);
  header.ts.tv_usec = suseconds_t(ns % kNsPerSecond);  // nanoseconds: the file's precision is NANO
  header.caplen = uint32_t(std::min<size_t>(frame.size(), kSnapLength));
  header.len = uint32_t(frame.size());
  constexpr uint64_t kRecordHeader = 16;
  if (limit_ != 0 && bytes_ + kRecordHeader + header.caplen > limit_) return void(++over_limit_);
  bytes_ += kRecordHeader + header.caplen;
  pcap_dump(reinterpret_cast<u_char*>(handles_->dumper), &header, frame.data());
  ++frames_;
}

void PcapWriter::flush() { pcap_dump_flush(handles_->dumper); }

}  // namespace hcaemu::traces
