// libFuzzer target: the vfio-user server's message handling *with* file descriptors and an
// asynchronous backend, as a hostile client drives it. The input is a program of steps:
//   0  feed up to 256 bytes of the input as stream bytes, with 0..3 fds of any kind attached
//   1  complete the oldest pending region access or reset (success or an error), maybe late
//   2  a device DMA read or write at an address from the input (through the maps, fd or not)
//   3  the client truncates the memfd it handed over last (the guarded copy must hold)
//   4  an MSI-X signal on a vector from the input
//   5  the client goes and comes back (new connection) with accesses still pending
//   6  a well-formed DMA_MAP with a fresh memfd (iova, size, offset, flags from the input)
//   7  a well-formed SET_IRQS on MSI-X with eventfds, pipes or /dev/null from the input
// Fds are memfds (sized by the input), eventfds, pipe ends and /dev/null. The server must answer
// every message with a well-formed reply, never crash, never leak an fd (checked at the end), and
// keep DMA inside the memory that is still there.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <dirent.h>
#include <functional>
#include <vector>

#include "common/endian.h"
#include "common/log.h"
#include "qemu-bridge/dispatcher.h"

namespace {

using namespace hcaemu;
using namespace hcaemu::vfio_user;

// Region accesses wait until the program completes them (or the input ends).
class AsyncBackend final : public DeviceBackend {
 public:
  std::deque<std::function<void(int)>> pending;

  RegionInfo region_info(uint32_t index) const override {
    switch (index) {
      case kBar0Region: return {1 << 16, true, true};
      case kConfigRegion: return {4096, true, true};
      default: return {};
    }
  }
  uint32_t irq_count(uint32_t index) const override { return index == kMsixIrq ? 8 : 0; }
  void region_read(uint32_t, uint64_t, uint32_t count, ReadDone done) override {
    pending.push_back([done = std::move(done), count](int err) { done(err, std::vector<uint8_t>(err ? 0 : count, 0xab)); });
  }
  void region_write(uint32_t, uint64_t, std::vector<uint8_t>, WriteDone done) override {
    if (done) pending.push_back([done = std::move(done)](int err) { done(err); });
  }
  void reset(WriteDone done) override { pending.push_back([done = std::move(done)](int err) { done(err); }); }
};

class CheckingSink final : public MessageSink {
 public:
  bool send(uint64_t, std::vector<uint8_t> bytes) override {
    if (bytes.size() < kHeaderSize || decode_header(bytes.data()).size != bytes.size()) __builtin_trap();
    return true;
  }
};

// Reads the program; zeros once it runs out.
struct Program {
  const uint8_t* data;
  size_t size, at = 0;
  bool done() const { return at >= size; }
  uint8_t u8() { return at < size ? data[at++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(u8()) << (8 * i);
    return v;
  }
};

size_t open_fds() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

UniqueFd memfd(uint64_t pages) {
  UniqueFd fd(memfd_create("fuzz-guest-ram", MFD_CLOEXEC));
  if (fd && ftruncate(fd.get(), off_t(pages * 4096)) != 0) return UniqueFd();
  return fd;
}

// One fd of the kind the program names; `client_memfds` keeps the client's own handle on memfds.
UniqueFd some_fd(Program& p, std::vector<UniqueFd>& client_memfds) {
  switch (p.u8() % 4) {
    case 0: {
      UniqueFd fd = memfd(1 + p.u8() % 16);
      if (fd) client_memfds.emplace_back(dup(fd.get()));
      return fd;
    }
    case 1: return UniqueFd(eventfd(0, EFD_CLOEXEC));
    case 2: {
      int ends[2];
      if (pipe2(ends, O_CLOEXEC) != 0) return UniqueFd();
      close(ends[0]);
      return UniqueFd(ends[1]);  // a pipe's write end: full after 64 KiB, never an eventfd
    }
    default: return UniqueFd(open("/dev/null", O_RDWR | O_CLOEXEC));
  }
}

void run(Program& p, AsyncBackend& backend) {
  CheckingSink sink;
  ProtocolOptions opts;
  opts.dma_timeout = std::chrono::milliseconds(0);
  MessageDispatcher d(backend, sink, opts);
  d.connect();
  auto decoder = std::make_unique<StreamDecoder>(d);
  const auto version = build_message(Header{1, kCmdVersion, 0, 0, 0}, encode_version(0, 0, "{}"));
  decoder->consume(version);
  std::vector<UniqueFd> client_memfds;
  uint16_t msg_id = 2;
  for (int step = 0; step < 64 && !p.done(); ++step) {
    switch (p.u8() % 8) {
      case 0: {
        const size_t n = std::min<size_t>(size_t(p.u8()) + 1, p.size - p.at);
        std::vector<uint8_t> bytes(p.data + p.at, p.data + p.at + n);
        p.at += n;
        std::vector<UniqueFd> fds;
        for (int i = p.u8() % 4; i > 0; --i) fds.push_back(some_fd(p, client_memfds));
        if (!decoder->consume(bytes, std::move(fds))) {  // the server drops such a client
          d.disconnect();
          d.connect();
          decoder = std::make_unique<StreamDecoder>(d);
          decoder->consume(version);
        }
        break;
      }
      case 1:
        if (!backend.pending.empty()) {
          auto done = std::move(backend.pending.front());
          backend.pending.pop_front();
          done(p.u8() % 4 == 0 ? EIO : 0);
        }
        break;
      case 2: {
        std::vector<uint8_t> buf(1 + p.u8() % 64);
        const uint64_t addr = p.u64() % (uint64_t(1) << 24);
        if (p.u8() & 1)
          d.dma().read(addr, buf);
        else
          d.dma().write(addr, buf);
        break;
      }
      case 3:
        if (!client_memfds.empty() && ftruncate(client_memfds.back().get(), off_t(p.u8() % 4) * 4096) != 0) break;
        break;
      case 4:
        d.signal(p.u8() % 10);
        break;
      case 5:
        d.disconnect();
        d.connect();
        decoder = std::make_unique<StreamDecoder>(d);
        decoder->consume(version);
        break;
      case 6: {
        uint8_t body[32] = {};
        const uint64_t pages = 1 + p.u8() % 16;
        store_le32(body, 32);
        store_le32(body + 4, p.u8() % 4);                       // read/write flags
        store_le64(body + 8, uint64_t(p.u8() % 4) * 4096);     // offset into the memfd
        store_le64(body + 16, (p.u64() % 256) * 4096);         // iova
        store_le64(body + 24, (1 + p.u8() % 20) * 4096);       // size (may pass the file's end)
        std::vector<UniqueFd> fds;
        fds.push_back(memfd(pages));
        if (fds.back()) client_memfds.emplace_back(dup(fds.back().get()));
        decoder->consume(build_message(Header{msg_id++, kCmdDmaMap, 0, 0, 0}, body), std::move(fds));
        break;
      }
      case 7: {
        const uint32_t count = p.u8() % 10;
        uint8_t body[20] = {};
        store_le32(body, 20);
        store_le32(body + 4, kIrqSetDataEventfd | kIrqSetActionTrigger);
        store_le32(body + 8, kMsixIrq);
        store_le32(body + 12, p.u8() % 4);  // start
        store_le32(body + 16, count);
        std::vector<UniqueFd> fds;
        for (uint32_t i = 0; i < count; ++i) fds.push_back(p.u8() % 3 ? UniqueFd(eventfd(0, EFD_CLOEXEC)) : some_fd(p, client_memfds));
        decoder->consume(build_message(Header{msg_id++, kCmdDeviceSetIrqs, 0, 0, 0}, body), std::move(fds));
        break;
      }
    }
  }
  d.disconnect();
  // Completions that come after the client went (the device finishing an access late).
  while (!backend.pending.empty()) {
    auto done = std::move(backend.pending.front());
    backend.pending.pop_front();
    done(0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = hcaemu::set_log_level("off");  // every rejected message would log a warning
  (void)quiet;
  const size_t fds_before = open_fds();
  {
    AsyncBackend backend;
    Program p{data, size};
    run(p, backend);
  }
  if (open_fds() != fds_before) {
    std::fprintf(stderr, "fd leak: %zu open, %zu before\n", open_fds(), fds_before);
    std::abort();
  }
  return 0;
}
