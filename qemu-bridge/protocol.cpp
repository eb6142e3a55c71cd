#include "qemu-bridge/protocol.h"

#include <array>
#include <cstring>

namespace hcaemu::vfio_user {

namespace {
constexpr std::array<std::string_view, kCmdMax + 1> kCommandNames = {
    "unknown",          "VERSION",         "DMA_MAP",           "DMA_UNMAP",        "DEVICE_GET_INFO",
    "GET_REGION_INFO",  "GET_REGION_IO_FDS", "GET_IRQ_INFO",    "SET_IRQS",         "REGION_READ",
    "REGION_WRITE",     "DMA_READ",        "DMA_WRITE",         "DEVICE_RESET",     "DIRTY_PAGES",
    "REGION_WRITE_MULTI", "DEVICE_FEATURE", "MIG_DATA_READ",    "MIG_DATA_WRITE",
};

std::vector<uint8_t> bytes(size_t n) { return std::vector<uint8_t>(n, 0); }
}  // namespace

std::string_view command_name(uint16_t cmd) { return cmd <= kCmdMax ? kCommandNames[cmd] : kCommandNames[0]; }

std::vector<uint8_t> build_message(Header h, std::span<const uint8_t> payload) {
  std::vector<uint8_t> m(kHeaderSize + payload.size());
  h.size = uint32_t(m.size());
  encode_header(m.data(), h);
  if (!payload.empty()) std::memcpy(m.data() + kHeaderSize, payload.data(), payload.size());
  return m;
}

std::vector<uint8_t> build_reply(const Header& request, std::span<const uint8_t> payload) {
  Header h{request.msg_id, request.command, 0, kFlagTypeReply, 0};
  return build_message(h, payload);
}

std::vector<uint8_t> build_error_reply(const Header& request, uint32_t err) {
  Header h{request.msg_id, request.command, 0, kFlagTypeReply | kFlagError, err};
  return build_message(h, {});
}

// ---- VERSION ----
std::optional<VersionPayload> decode_version(std::span<const uint8_t> p) {
  if (p.size() < kVersionFixedSize) return std::nullopt;
  VersionPayload v;
  v.major = load_le16(p.data());
  v.minor = load_le16(p.data() + 2);
  auto rest = p.subspan(kVersionFixedSize);
  if (!rest.empty()) {
    v.has_json = true;
    v.json_nul_terminated = rest.back() == 0;
    size_t n = v.json_nul_terminated ? rest.size() - 1 : rest.size();
    v.json = std::string_view(reinterpret_cast<const char*>(rest.data()), n);
  }
  return v;
}

std::vector<uint8_t> encode_version(uint16_t major, uint16_t minor, std::string_view json) {
  auto b = bytes(kVersionFixedSize + json.size() + 1);
  store_le16(b.data(), major);
  store_le16(b.data() + 2, minor);
  if (!json.empty()) std::memcpy(b.data() + kVersionFixedSize, json.data(), json.size());
  return b;  // the last byte stays 0: the NUL terminator
}

// ---- DMA_MAP / UNMAP ----
std::optional<DmaMapPayload> decode_dma_map(std::span<const uint8_t> p) {
  if (p.size() < kDmaMapSize) return std::nullopt;
  const uint8_t* d = p.data();
  return DmaMapPayload{load_le32(d), load_le32(d + 4), load_le64(d + 8), load_le64(d + 16), load_le64(d + 24)};
}
std::optional<DmaUnmapPayload> decode_dma_unmap(std::span<const uint8_t> p) {
  if (p.size() < kDmaUnmapSize) return std::nullopt;
  const uint8_t* d = p.data();
  return DmaUnmapPayload{load_le32(d), load_le32(d + 4), load_le64(d + 8), load_le64(d + 16)};
}
std::vector<uint8_t> encode_dma_map(const DmaMapPayload& m) {
  auto b = bytes(kDmaMapSize);
  store_le32(b.data(), m.argsz);
  store_le32(b.data() + 4, m.flags);
  store_le64(b.data() + 8, m.offset);
  store_le64(b.data() + 16, m.addr);
  store_le64(b.data() + 24, m.size);
  return b;
}
std::vector<uint8_t> encode_dma_unmap(const DmaUnmapPayload& u) {
  auto b = bytes(kDmaUnmapSize);
  store_le32(b.data(), u.argsz);
  store_le32(b.data() + 4, u.flags);
  store_le64(b.data() + 8, u.addr);
  store_le64(b.data() + 16, u.size);
  return b;
}

// ---- DEVICE_GET_INFO ----
std::optional<DeviceInfo> decode_device_info(std::span<const uint8_t> p) {
  if (p.size() < kDeviceInfoSize) return std::nullopt;
  const uint8_t* d = p.data();
  return DeviceInfo{load_le32(d), load_le32(d + 4), load_le32(d + 8), load_le32(d + 12)};
}
std::vector<uint8_t> encode_device_info(const DeviceInfo& i) {
  auto b = bytes(kDeviceInfoSize);
  store_le32(b.data(), i.argsz);
  store_le32(b.data() + 4, i.flags);
  store_le32(b.data() + 8, i.num_regions);
  store_le32(b.data() + 12, i.num_irqs);
  return b;
}

// ---- REGION_INFO ----
std::optional<RegionInfoPayload> decode_region_info(std::span<const uint8_t> p) {
  if (p.size() < kRegionInfoSize) return std::nullopt;
  const uint8_t* d = p.data();
  return RegionInfoPayload{load_le32(d),      load_le32(d + 4),  load_le32(d + 8),
                           load_le32(d + 12), load_le64(d + 16), load_le64(d + 24)};
}
std::vector<uint8_t> encode_region_info(const RegionInfoPayload& r) {
  auto b = bytes(kRegionInfoSize);
  store_le32(b.data(), r.argsz);
  store_le32(b.data() + 4, r.flags);
  store_le32(b.data() + 8, r.index);
  store_le32(b.data() + 12, r.cap_offset);
  store_le64(b.data() + 16, r.size);
  store_le64(b.data() + 24, r.offset);
  return b;
}

// ---- IRQ_INFO ----
std::optional<IrqInfoPayload> decode_irq_info(std::span<const uint8_t> p) {
  if (p.size() < kIrqInfoSize) return std::nullopt;
  const uint8_t* d = p.data();
  return IrqInfoPayload{load_le32(d), load_le32(d + 4), load_le32(d + 8), load_le32(d + 12)};
}
std::vector<uint8_t> encode_irq_info(const IrqInfoPayload& i) {
  auto b = bytes(kIrqInfoSize);
  store_le32(b.data(), i.argsz);
  store_le32(b.data() + 4, i.flags);
  store_le32(b.data() + 8, i.index);
  store_le32(b.data() + 12, i.count);
  return b;
}

// ---- SET_IRQS ----
std::optional<IrqSetPayload> decode_irq_set(std::span<const uint8_t> p) {
  if (p.size() < kIrqSetFixedSize) return std::nullopt;
  const uint8_t* d = p.data();
  return IrqSetPayload{load_le32(d),      load_le32(d + 4),  load_le32(d + 8),
                       load_le32(d + 12), load_le32(d + 16), p.subspan(kIrqSetFixedSize)};
}
std::vector<uint8_t> encode_irq_set(const IrqSetPayload& s) {
  auto b = bytes(kIrqSetFixedSize + s.data.size());
  store_le32(b.data(), s.argsz);
  store_le32(b.data() + 4, s.flags);
  store_le32(b.data() + 8, s.index);
  store_le32(b.data() + 12, s.start);
  store_le32(b.data() + 16, s.count);
  if (!s.data.empty()) std::memcpy(b.data() + kIrqSetFixedSize, s.data.data(), s.data.size());
  return b;
}

// ---- REGION_READ / WRITE ----
std::optional<RegionAccessPayload> decode_region_access(std::span<const uint8_t> p) {
  if (p.size() < kRegionAccessFixedSize) return std::nullopt;
  const uint8_t* d = p.data();
  return RegionAccessPayload{load_le64(d), load_le32(d + 8), load_le32(d + 12), p.subspan(kRegionAccessFixedSize)};
}
std::vector<uint8_t> encode_region_access(uint64_t offset, uint32_t region, uint32_t count,
                                          std::span<const uint8_t> data) {
  auto b = bytes(kRegionAccessFixedSize + data.size());
  store_le64(b.data(), offset);
  store_le32(b.data() + 8, region);
  store_le32(b.data() + 12, count);
  if (!data.empty()) std::memcpy(b.data() + kRegionAccessFixedSize, data.data(), data.size());
  return b;
}

// ---- DMA_READ / DMA_WRITE (QEMU layout, see protocol.h) ----
std::vector<uint8_t> build_dma_read_request(uint16_t msg_id, uint64_t addr, uint32_t count) {
  auto m = bytes(kDmaRwFixedSize);
  encode_header(m.data(), Header{msg_id, kCmdDmaRead, kDmaRwFixedSize, kFlagTypeCommand, 0});
  store_le64(m.data() + kDmaRwAddrOffset, addr);
  store_le32(m.data() + kDmaRwCountOffset, count);
  return m;
}

std::vector<uint8_t> build_dma_write_request(uint16_t msg_id, uint64_t addr, std::span<const uint8_t> data) {
  auto m = bytes(kDmaRwFixedSize + data.size());
  encode_header(m.data(), Header{msg_id, kCmdDmaWrite, uint32_t(m.size()), kFlagTypeCommand, 0});
  store_le64(m.data() + kDmaRwAddrOffset, addr);
  store_le32(m.data() + kDmaRwCountOffset, uint32_t(data.size()));
  if (!data.empty()) std::memcpy(m.data() + kDmaRwDataOffset, data.data(), data.size());
  return m;
}

std::optional<std::span<const uint8_t>> parse_dma_read_reply(std::span<const uint8_t> msg, uint64_t addr,
                                                             uint32_t count) {
  if (msg.size() < kDmaRwDataOffset || msg.size() - kDmaRwDataOffset < count) return std::nullopt;
  if (load_le64(msg.data() + kDmaRwAddrOffset) != addr) return std::nullopt;
  if (load_le32(msg.data() + kDmaRwCountOffset) != count) return std::nullopt;
  return msg.subspan(kDmaRwDataOffset, count);
}

std::optional<DmaRwRequest> parse_dma_request(std::span<const uint8_t> msg) {
  if (msg.size() < kDmaRwFixedSize) return std::nullopt;
  DmaRwRequest r;
  r.addr = load_le64(msg.data() + kDmaRwAddrOffset);
  r.count = load_le32(msg.data() + kDmaRwCountOffset);
  Header h = decode_header(msg.data());
  if (h.command == kCmdDmaWrite) {
    if (msg.size() - kDmaRwFixedSize < r.count) return std::nullopt;
    r.data = msg.subspan(kDmaRwDataOffset, r.count);
  }
  return r;
}

std::vector<uint8_t> build_dma_read_reply(const Header& request, uint64_t addr, std::span<const uint8_t> data) {
  auto m = bytes(kDmaRwFixedSize + data.size());
  encode_header(m.data(), Header{request.msg_id, request.command, uint32_t(m.size()), kFlagTypeReply, 0});
  store_le64(m.data() + kDmaRwAddrOffset, addr);
  store_le32(m.data() + kDmaRwCountOffset, uint32_t(data.size()));
  if (!data.empty()) std::memcpy(m.data() + kDmaRwDataOffset, data.data(), data.size());
  return m;
}

}  // namespace hcaemu::vfio_user
