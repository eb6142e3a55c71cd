#include "testbench/vfio_user/client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

namespace hcaemu::vfio_user::test {

bool TestClient::connect(const std::string& path) {
  close();
  UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return false;
  fd_ = std::move(s);
  eof_ = false;
  stash_.clear();
  return true;
}

void TestClient::close() {
  fd_.reset();
  stash_.clear();
}

bool TestClient::send_raw(std::span<const uint8_t> bytes, std::span<const int> fds) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  std::vector<char> ctrl;
  if (!fds.empty()) {
    ctrl.resize(CMSG_SPACE(sizeof(int) * fds.size()));
    mh.msg_control = ctrl.data();
    mh.msg_controllen = ctrl.size();
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n = ::sendmsg(fd_.get(), &mh, MSG_NOSIGNAL);
  if (n < 0) return false;
  size_t off = size_t(n);
  while (off < bytes.size()) {  // the rest without fds
    ssize_t m = ::send(fd_.get(), bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (m <= 0) return false;
    off += size_t(m);
  }
  return true;
}

uint16_t TestClient::send(uint16_t cmd, std::span<const uint8_t> payload, std::span<const int> fds, uint32_t flags) {
  uint16_t id = next_id_++;
  auto msg = build_message(Header{id, cmd, 0, flags, 0}, payload);
  send_raw(msg, fds);
  return id;
}

std::optional<Received> TestClient::recv_one(std::chrono::milliseconds timeout) {
  if (!fd_ || eof_) return std::nullopt;
  pollfd p{fd_.get(), POLLIN, 0};
  if (::poll(&p, 1, int(timeout.count())) <= 0) return std::nullopt;
  uint8_t hdr[kHeaderSize];
  iovec iov{hdr, sizeof(hdr)};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * 16)];
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = ctrl;
  mh.msg_controllen = sizeof(ctrl);
  ssize_t n = ::recvmsg(fd_.get(), &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);
  if (n != ssize_t(sizeof(hdr))) {
    eof_ = true;
    return std::nullopt;
  }
  Received r;
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; ++i) {
      int f;
      std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      r.fds.emplace_back(f);
    }
  }
  r.hdr = decode_header(hdr);
  if (r.hdr.size < kHeaderSize) {
    eof_ = true;
    return std::nullopt;
  }
  r.payload.resize(r.hdr.size - kHeaderSize);
  if (!r.payload.empty() && ::recv(fd_.get(), r.payload.data(), r.payload.size(), MSG_WAITALL) !=
                                ssize_t(r.payload.size())) {
    eof_ = true;
    return std::nullopt;
  }
  return r;
}

// QEMU's side of DMA_READ/WRITE (hw/vfio-user/pci.c behaviour, our own code).
bool TestClient::answer_if_request(Received& r) {
  if (r.hdr.is_reply() || (r.hdr.command != kCmdDmaRead && r.hdr.command != kCmdDmaWrite)) return false;
  std::vector<uint8_t> whole(kHeaderSize + r.payload.size());
  encode_header(whole.data(), r.hdr);
  std::memcpy(whole.data() + kHeaderSize, r.payload.data(), r.payload.size());
  auto req = parse_dma_request(whole);
  uint8_t* mem = nullptr;
  if (req) {
    for (auto& [base, buf] : memory_) {
      if (req->addr >= base && req->addr - base <= buf.size() && req->count <= buf.size() - (req->addr - base)) {
        mem = buf.data() + (req->addr - base);
        break;
      }
    }
  }
  ++dma_served_;
  if (!req || !mem) {
    auto e = build_error_reply(r.hdr, req ? EFAULT : EINVAL);
    send_raw(e);
    return true;
  }
  if (r.hdr.command == kCmdDmaRead) {
    send_raw(build_dma_read_reply(r.hdr, req->addr, std::span<const uint8_t>(mem, req->count)));
  } else {
    std::memcpy(mem, req->data.data(), req->count);
    send_raw(build_reply(r.hdr, {}));  // header only, as QEMU does
  }
  return true;
}

std::optional<Received> TestClient::recv(std::chrono::milliseconds timeout) {
  if (!stash_.empty()) {
    Received r = std::move(stash_.front());
    stash_.pop_front();
    return r;
  }
  return recv_one(timeout);
}

std::optional<Received> TestClient::wait_reply(uint16_t id, std::chrono::milliseconds timeout) {
  for (auto it = stash_.begin(); it != stash_.end(); ++it) {
    if (it->hdr.msg_id == id) {
      Received r = std::move(*it);
      stash_.erase(it);
      return r;
    }
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto r = recv_one(std::max(left, 1ms));
    if (!r) {
      if (eof_) return std::nullopt;
      continue;
    }
    if (answer_if_request(*r)) continue;
    if (r->hdr.msg_id == id) return r;
    stash_.push_back(std::move(*r));
  }
  return std::nullopt;
}

std::optional<Received> TestClient::request(uint16_t cmd, std::span<const uint8_t> payload, std::span<const int> fds,
                                            uint32_t flags, std::chrono::milliseconds timeout) {
  return wait_reply(send(cmd, payload, fds, flags), timeout);
}

bool TestClient::peer_closed(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!eof_ && std::chrono::steady_clock::now() < deadline) {
    auto r = recv_one(50ms);
    if (r) stash_.push_back(std::move(*r));
  }
  return eof_;
}

bool TestClient::silent_for(std::chrono::milliseconds timeout) {
  if (!stash_.empty()) return false;
  auto r = recv_one(timeout);
  if (r) {
    stash_.push_back(std::move(*r));
    return false;
  }
  return true;
}

std::string TestClient::default_caps_json() {
  return R"({"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576,"pgsizes":4096,)"
         R"("max_dma_maps":65535,"write_multiple":true,"migration":{"pgsize":4096,"max_bitmap_size":268435456}}})";
}

std::optional<Received> TestClient::version(const std::string& json, uint16_t major, uint16_t minor) {
  return request(kCmdVersion, encode_version(major, minor, json));
}
std::optional<Received> TestClient::get_info(uint32_t argsz) {
  return request(kCmdDeviceGetInfo, encode_device_info(DeviceInfo{argsz, 0, 0, 0}));
}
std::optional<Received> TestClient::region_info(uint32_t index, uint32_t argsz) {
  return request(kCmdDeviceGetRegionInfo, encode_region_info(RegionInfoPayload{argsz, 0, index, 0, 0, 0}));
}
std::optional<Received> TestClient::irq_info(uint32_t index) {
  return request(kCmdDeviceGetIrqInfo, encode_irq_info(IrqInfoPayload{kIrqInfoSize, 0, index, 0}));
}
std::optional<Received> TestClient::set_irqs(uint32_t index, uint32_t flags, uint32_t start, uint32_t count,
                                             std::span<const int> fds) {
  return request(kCmdDeviceSetIrqs, encode_irq_set(IrqSetPayload{kIrqSetFixedSize, flags, index, start, count, {}}),
                 fds);
}
std::optional<Received> TestClient::region_read(uint32_t region, uint64_t offset, uint32_t count) {
  return request(kCmdRegionRead, encode_region_access(offset, region, count, {}));
}
std::optional<Received> TestClient::region_write(uint32_t region, uint64_t offset, std::span<const uint8_t> data) {
  return request(kCmdRegionWrite, encode_region_access(offset, region, uint32_t(data.size()), data));
}
uint16_t TestClient::region_write_posted(uint32_t region, uint64_t offset, std::span<const uint8_t> data) {
  return send(kCmdRegionWrite, encode_region_access(offset, region, uint32_t(data.size()), data), {}, kFlagNoReply);
}
std::optional<Received> TestClient::dma_map(uint64_t iova, uint64_t size, uint32_t flags, int fd, uint64_t offset) {
  auto p = encode_dma_map(DmaMapPayload{kDmaMapSize, flags, offset, iova, size});
  if (fd >= 0) {
    int fds[1] = {fd};
    return request(kCmdDmaMap, p, fds);
  }
  return request(kCmdDmaMap, p);
}
std::optional<Received> TestClient::dma_unmap(uint64_t iova, uint64_t size, uint32_t flags) {
  return request(kCmdDmaUnmap, encode_dma_unmap(DmaUnmapPayload{kDmaUnmapSize, flags, iova, size}));
}
std::optional<Received> TestClient::reset() { return request(kCmdDeviceReset, {}); }

void TestClient::add_dma_memory(uint64_t iova, size_t size) { memory_[iova] = std::vector<uint8_t>(size, 0); }

int TestClient::serve_dma(int count, std::chrono::milliseconds timeout) {
  int served = 0;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (served < count && std::chrono::steady_clock::now() < deadline) {
    auto r = recv_one(10ms);
    if (!r) {
      if (eof_) break;
      continue;
    }
    if (answer_if_request(*r)) {
      ++served;
    } else {
      stash_.push_back(std::move(*r));
    }
  }
  return served;
}

}  // namespace hcaemu::vfio_user::test
