// libFuzzer target: arbitrary byte streams through the StreamDecoder and MessageDispatcher,
// without a socket. The first input byte chooses how the stream is cut into chunks and whether a
// valid VERSION is prepended (so the fuzzer reaches the post-handshake handlers quickly).
// Build: cmake -DCMAKE_CXX_COMPILER=clang++ -DHCAEMU_FUZZ=ON; run: fuzz_vfio_user_messages -max_total_time=30
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/log.h"
#include "qemu-bridge/dispatcher.h"

namespace {

using namespace hcaemu::vfio_user;

class SyncBackend final : public DeviceBackend {
 public:
  RegionInfo region_info(uint32_t index) const override {
    switch (index) {
      case 0: return {4096, true, true};
      case 6: return {512, true, false};
      case 7: return {4096, true, true};
      default: return {};
    }
  }
  uint32_t irq_count(uint32_t index) const override { return index == kMsixIrq ? 4 : (index == kMsiIrq ? 0 : 1); }
  void region_read(uint32_t index, uint64_t offset, uint32_t count, ReadDone done) override {
    done(0, std::vector<uint8_t>(count, uint8_t(index)));
  }
  void region_write(uint32_t, uint64_t, std::vector<uint8_t>, WriteDone done) override {
    if (done) done(0);
  }
  void reset(WriteDone done) override { done(0); }
};

class NullSink final : public MessageSink {
 public:
  bool send(uint64_t, std::vector<uint8_t> bytes) override {
    // Every reply we emit must at least carry a well-formed header of the right size.
    if (bytes.size() < kHeaderSize || decode_header(bytes.data()).size != bytes.size()) __builtin_trap();
    return true;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const bool quiet = hcaemu::set_log_level("off");  // every rejected message would log a warning
  (void)quiet;
  static SyncBackend backend;
  NullSink sink;
  ProtocolOptions opts;
  opts.dma_timeout = std::chrono::milliseconds(0);
  MessageDispatcher d(backend, sink, opts);
  d.connect();
  StreamDecoder dec(d);

  const uint8_t mode = data[0];
  std::span<const uint8_t> rest(data + 1, size - 1);
  if (mode & 0x80) {
    auto v = build_message(Header{1, kCmdVersion, 0, 0, 0}, encode_version(0, 0, "{}"));
    dec.consume(v);
  }
  const size_t chunk = (mode & 0x7f) + 1;
  while (!rest.empty()) {
    const size_t n = std::min(chunk, rest.size());
    if (!dec.consume(rest.subspan(0, n))) break;
    rest = rest.subspan(n);
  }
  // Touch what the messages may have set up.
  uint8_t buf[16];
  d.dma().read(0, buf);
  d.dma().write(0x1000, buf);
  d.signal(0);
  d.disconnect();
  return 0;
}
