#include "replay/capture_reader.h"

#include <pcap/pcap.h>

namespace hcaemu::replay {

struct CaptureReader::Handle {
  pcap_t* pcap = nullptr;
  ~Handle() {
    if (pcap != nullptr) pcap_close(pcap);
  }
};

CaptureReader::CaptureReader(std::unique_ptr<Handle> handle, std::string path)
    : handle_(std::move(handle)), path_(std::move(path)) {}

CaptureReader::~CaptureReader() = default;

std::unique_ptr<CaptureReader> CaptureReader::open(const std::string& path, std::string* error) {
  char message[PCAP_ERRBUF_SIZE] = {};
  auto handle = std::make_unique<Handle>();
  // Nanosecond stamps whatever the file holds (libpcap scales microsecond captures).
  handle->pcap = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, message);
  if (handle->pcap == nullptr) {
    if (error) *error = path + ": " + message;
    return nullptr;
  }
  const int link = pcap_datalink(handle->pcap);
  if (link != DLT_EN10MB) {
    if (error) {
      const char* name = pcap_datalink_val_to_name(link);
      *error = path + ": link type " + (name ? name : std::to_string(link)) + " is not Ethernet (EN10MB)";
    }
    return nullptr;
  }
  return std::unique_ptr<CaptureReader>(new CaptureReader(std::move(handle), path));
}

bool CaptureReader::next(CapturedFrame& frame) {
  if (!error_.empty()) return false;
  pcap_pkthdr* header = nullptr;
  const u_char* data = nullptr;
  const int rc = pcap_next_ex(handle_->pcap, &header, &data);
  if (rc == PCAP_ERROR_BREAK) return false;  // the end of the capture
  if (rc != 1) {
    error_ = path_ + ": frame " + std::to_string(next_index_) + ": " + pcap_geterr(handle_->pcap);
    return false;
  }
  frame.index = next_index_++;
  frame.time_ns = uint64_t(header->ts.tv_sec) * 1'000'000'000ull + uint64_t(header->ts.tv_usec);
  frame.wire_length = header->len;
  frame.bytes.assign(data, data + header->caplen);
  return true;
}

}  // namespace hcaemu::replay
