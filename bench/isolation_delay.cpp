// How much one misbehaving vfio-user client delays another function (issue 14). Starts a real
// hcaemu (PF + one VF), connects a well-behaved client to the VF that reads its BAR0 (the init
// segment: a round trip through the I/O thread, the kernel queue and the SystemC kernel) in a
// loop, and meanwhile lets a client on the PF misbehave in one way at a time:
//   idle         nothing (the baseline)
//   posted-flood posted REGION_WRITEs to its doorbells as fast as the socket takes them
//   no-reading   requests without ever reading a reply (its outbox fills; hcaemu drops it)
//   dma-silence  a DMA map without an fd and a command: hcaemu's DMA_READ is never answered
//   truncated    a memfd map its client truncates, then a command (the copy faults)
//   fd-flood     one-byte messages with 16 eventfds each, reconnecting when dropped
// Prints, per scenario, the VF client's read latency (p50, p99, max) and reads done. The figures
// are wall-clock: they show the bound on another function's delay, not model time.
// Usage: isolation_delay HCAEMU [--seconds N]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/endian.h"
#include "qemu-bridge/device_backend.h"
#include "testbench/vfio_user/client.h"

extern char** environ;

namespace {

using namespace hcaemu::vfio_user;
using namespace hcaemu::vfio_user::test;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kCmdqAddrHigh = 0x10, kCmdqAddrLow = 0x14, kCmdDoorbell = 0x18;

void be32(std::vector<uint8_t>& b, uint32_t v) {
  b.resize(4);
  hcaemu::store_be32(b.data(), v);
}

bool bring_up(TestClient& c, const std::string& socket) {
  if (!c.connect(socket) || !c.version()) return false;
  const uint8_t command[2] = {0x06, 0x00};  // memory space + bus master
  return c.region_write(kConfigRegion, 0x04, command).has_value();
}

// The PF's client rings its command doorbell with its queue at `iova` (init segment registers are
// big-endian). The device then reads the command entry from the client's memory.
void ring_command(TestClient& c, uint64_t iova) {
  std::vector<uint8_t> v;
  be32(v, uint32_t(iova >> 32));
  c.region_write(kBar0Region, kCmdqAddrHigh, v);
  be32(v, uint32_t(iova));
  c.region_write(kBar0Region, kCmdqAddrLow, v);
  be32(v, 1);
  c.region_write_posted(kBar0Region, kCmdDoorbell, v);
}

void misbehave(const std::string& kind, const std::string& pf_socket, const std::atomic<bool>& stop) {
  while (!stop) {
    TestClient c;
    if (!bring_up(c, pf_socket)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (kind == "idle") {
      while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } else if (kind == "posted-flood") {
      std::vector<uint8_t> v(4, 0);
      while (!stop && c.connected()) c.region_write_posted(kBar0Region, 0x3000 + 0x800, v);  // a UAR doorbell
    } else if (kind == "no-reading") {
      const auto payload = encode_region_access(0, kConfigRegion, 4, {});
      while (!stop && c.send(kCmdRegionRead, payload) != 0 && !c.peer_closed(std::chrono::milliseconds(0))) {
      }
    } else if (kind == "dma-silence") {
      c.dma_map(0x100000, 0x10000, kDmaMapFlagRead | kDmaMapFlagWrite);  // no fd: DMA by message
      ring_command(c, 0x100000);
      // Never answer: sleep until hcaemu gives up on us (its DMA timeout), then do it again.
      for (int i = 0; i < 60 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } else if (kind == "truncated") {
      const int fd = memfd_create("guest-ram", MFD_CLOEXEC);
      if (fd >= 0 && ftruncate(fd, 0x10000) == 0) {
        c.dma_map(0x100000, 0x10000, kDmaMapFlagRead | kDmaMapFlagWrite, fd);
        if (ftruncate(fd, 0) == 0) ring_command(c, 0x100000);
      }
      if (fd >= 0) close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } else if (kind == "fd-flood") {
      int fds[16];
      for (int& fd : fds) fd = eventfd(0, EFD_CLOEXEC);
      const uint8_t byte = 0;
      while (!stop && c.send_raw({&byte, 1}, fds)) {
      }
      for (int fd : fds) close(fd);
    }
  }
}

// What hcaemu logged since `from` (its warnings are rate-limited): the first line, and how many.
std::string logged_since(const std::string& log, std::uintmax_t from, size_t& lines) {
  lines = 0;
  FILE* f = std::fopen(log.c_str(), "r");
  if (f == nullptr) return {};
  std::fseek(f, long(from), SEEK_SET);
  std::string first;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    if (lines++ == 0) first = line;
  }
  std::fclose(f);
  if (!first.empty() && first.back() == '\n') first.pop_back();
  const size_t bracket = first.find("] ");
  return bracket == std::string::npos ? first : first.substr(bracket + 2, 110);
}

struct Figures {
  size_t reads = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
};

Figures measure(const std::string& vf_socket, std::chrono::seconds duration) {
  TestClient c;
  Figures f;
  if (!bring_up(c, vf_socket)) return f;
  std::vector<double> us;
  const auto end = Clock::now() + duration;
  while (Clock::now() < end) {
    const auto t0 = Clock::now();
    if (!c.region_read(kBar0Region, 0, 4)) break;  // fw_rev of the init segment
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  if (us.empty()) return f;
  std::sort(us.begin(), us.end());
  f.reads = us.size();
  f.p50_us = us[us.size() / 2];
  f.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  f.max_us = us.back();
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: isolation_delay HCAEMU [--seconds N]\n");
    return 2;
  }
  int seconds = 5;
  if (argc >= 4 && std::string(argv[2]) == "--seconds") seconds = std::max(1, std::atoi(argv[3]));
  char dir_template[] = "/tmp/isolation-delay.XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return 1;
  const std::string sockets = std::string(dir) + "/sockets", log = std::string(dir) + "/hcaemu.log";
  signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args = {argv[1], "--socket-dir", sockets, "--vfs", "1", "--log-level", "warn"};
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  if (posix_spawn(&pid, argv[1], &actions, nullptr, argp.data(), environ) != 0) {
    std::perror("posix_spawn");
    return 1;
  }
  for (int i = 0; i < 100 && !std::filesystem::exists(sockets + "/vf0.sock"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::printf("isolation_delay: the VF client's BAR0 reads while the PF client misbehaves, %d s each\n", seconds);
  std::printf("%-14s %10s %10s %10s %12s\n", "PF client", "reads", "p50 us", "p99 us", "max us");
  int status = 0;
  for (const char* kind : {"idle", "posted-flood", "no-reading", "dma-silence", "truncated", "fd-flood"}) {
    const std::uintmax_t log_at = std::filesystem::file_size(log);
    std::atomic<bool> stop{false};
    std::thread attacker(misbehave, std::string(kind), sockets + "/pf.sock", std::cref(stop));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the misbehaviour under way
    const Figures f = measure(sockets + "/vf0.sock", std::chrono::seconds(seconds));
    stop = true;
    attacker.join();
    std::printf("%-14s %10zu %10.1f %10.1f %12.1f\n", kind, f.reads, f.p50_us, f.p99_us, f.max_us);
    size_t lines = 0;
    const std::string first = logged_since(log, log_at, lines);
    if (lines != 0) std::printf("%14s hcaemu logged %zu line(s), first: %s\n", "", lines, first.c_str());
    std::fflush(stdout);
    if (f.reads == 0) status = 1;
  }
  const bool alive = kill(pid, 0) == 0;
  kill(pid, SIGTERM);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  std::printf("hcaemu %s through every scenario; its log: %s\n", alive ? "stayed up" : "DIED", log.c_str());
  return alive ? status : 1;
}
