#pragma once
// vfio-user wire format: named constants, plain structs and little-endian encode/decode for every
// message the server handles (docs: vfio-user.md sections 2-4). One place per layout; protocol
// logic never uses raw offsets. Every decode_* checks the length it is given and returns nullopt
// when the bytes are too short, so no length from the wire is ever trusted.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/endian.h"

namespace hcaemu::vfio_user {

// ---- Header (section 2) ----------------------------------------------------------------------
inline constexpr uint32_t kHeaderSize = 16;

enum Command : uint16_t {
  kCmdVersion = 1,
  kCmdDmaMap = 2,
  kCmdDmaUnmap = 3,
  kCmdDeviceGetInfo = 4,
  kCmdDeviceGetRegionInfo = 5,
  kCmdDeviceGetRegionIoFds = 6,
  kCmdDeviceGetIrqInfo = 7,
  kCmdDeviceSetIrqs = 8,
  kCmdRegionRead = 9,
  kCmdRegionWrite = 10,
  kCmdDmaRead = 11,
  kCmdDmaWrite = 12,
  kCmdDeviceReset = 13,
  kCmdDirtyPages = 14,  // migration v1, removed from the spec
  kCmdRegionWriteMulti = 15,
  kCmdDeviceFeature = 16,
  kCmdMigDataRead = 17,
  kCmdMigDataWrite = 18,
  kCmdMax = 18,
};

// Name for logs; "unknown" outside 1..18.
std::string_view command_name(uint16_t cmd);

inline constexpr uint32_t kFlagTypeMask = 0xf;
inline constexpr uint32_t kFlagTypeCommand = 0;
inline constexpr uint32_t kFlagTypeReply = 1;
inline constexpr uint32_t kFlagNoReply = 0x10;
inline constexpr uint32_t kFlagError = 0x20;

struct Header {
  uint16_t msg_id = 0;
  uint16_t command = 0;
  uint32_t size = 0;  // whole message, header included
  uint32_t flags = 0;
  uint32_t error = 0;  // errno, valid in an ERROR reply

  uint32_t type() const { return flags & kFlagTypeMask; }
  bool is_reply() const { return type() == kFlagTypeReply; }
  bool no_reply() const { return (flags & kFlagNoReply) != 0; }
  bool is_error() const { return (flags & kFlagError) != 0; }
};

inline Header decode_header(const uint8_t* p) {
  return Header{load_le16(p), load_le16(p + 2), load_le32(p + 4), load_le32(p + 8), load_le32(p + 12)};
}
inline void encode_header(uint8_t* p, const Header& h) {
  store_le16(p, h.msg_id);
  store_le16(p + 2, h.command);
  store_le32(p + 4, h.size);
  store_le32(p + 8, h.flags);
  store_le32(p + 12, h.error);
}

// A whole message on the wire: header then `payload`, header.size fixed up from the payload.
std::vector<uint8_t> build_message(Header h, std::span<const uint8_t> payload);
// The reply to `request`: same id and command, type REPLY.
std::vector<uint8_t> build_reply(const Header& request, std::span<const uint8_t> payload);
// The header-only ERROR reply carrying `err` (a positive errno).
std::vector<uint8_t> build_error_reply(const Header& request, uint32_t err);

// ---- VERSION (section 3) ---------------------------------------------------------------------
inline constexpr uint16_t kVersionMajor = 0;
inline constexpr uint16_t kVersionMinor = 0;
inline constexpr uint32_t kVersionFixedSize = 4;  // major u16, minor u16, then NUL-terminated JSON

struct VersionPayload {
  uint16_t major = 0;
  uint16_t minor = 0;
  std::string_view json;  // without the NUL; empty when the message carries no JSON
  bool has_json = false;
  bool json_nul_terminated = false;
};
std::optional<VersionPayload> decode_version(std::span<const uint8_t> p);
std::vector<uint8_t> encode_version(uint16_t major, uint16_t minor, std::string_view json);  // adds the NUL

// ---- DMA_MAP / DMA_UNMAP (section 4) ---------------------------------------------------------
inline constexpr uint32_t kDmaMapFlagRead = 1u << 0;
inline constexpr uint32_t kDmaMapFlagWrite = 1u << 1;
inline constexpr uint32_t kDmaUnmapFlagGetDirtyBitmap = 1u << 0;
inline constexpr uint32_t kDmaUnmapFlagAll = 1u << 1;
inline constexpr uint32_t kDmaMapSize = 32;
inline constexpr uint32_t kDmaUnmapSize = 24;

struct DmaMapPayload {
  uint32_t argsz = 0, flags = 0;
  uint64_t offset = 0;  // offset inside the fd
  uint64_t addr = 0;    // IOVA
  uint64_t size = 0;
};
struct DmaUnmapPayload {
  uint32_t argsz = 0, flags = 0;
  uint64_t addr = 0, size = 0;
};
std::optional<DmaMapPayload> decode_dma_map(std::span<const uint8_t> p);
std::optional<DmaUnmapPayload> decode_dma_unmap(std::span<const uint8_t> p);
std::vector<uint8_t> encode_dma_map(const DmaMapPayload& m);
std::vector<uint8_t> encode_dma_unmap(const DmaUnmapPayload& u);

// ---- DEVICE_GET_INFO -------------------------------------------------------------------------
inline constexpr uint32_t kDeviceFlagReset = 1u << 0;
inline constexpr uint32_t kDeviceFlagPci = 1u << 1;
inline constexpr uint32_t kDeviceInfoSize = 16;
struct DeviceInfo {
  uint32_t argsz = 0, flags = 0, num_regions = 0, num_irqs = 0;
};
std::optional<DeviceInfo> decode_device_info(std::span<const uint8_t> p);
std::vector<uint8_t> encode_device_info(const DeviceInfo& d);

// ---- DEVICE_GET_REGION_INFO (struct vfio_region_info) ----------------------------------------
inline constexpr uint32_t kRegionFlagRead = 1u << 0;
inline constexpr uint32_t kRegionFlagWrite = 1u << 1;
inline constexpr uint32_t kRegionFlagMmap = 1u << 2;
inline constexpr uint32_t kRegionFlagCaps = 1u << 3;
inline constexpr uint32_t kRegionInfoSize = 32;
// The region's `offset` field (used only as an mmap offset) is index << 40, as Linux vfio-pci does.
inline constexpr unsigned kRegionOffsetShift = 40;
struct RegionInfoPayload {
  uint32_t argsz = 0, flags = 0, index = 0, cap_offset = 0;
  uint64_t size = 0, offset = 0;
};
std::optional<RegionInfoPayload> decode_region_info(std::span<const uint8_t> p);
std::vector<uint8_t> encode_region_info(const RegionInfoPayload& r);

// ---- DEVICE_GET_IRQ_INFO (struct vfio_irq_info) ----------------------------------------------
inline constexpr uint32_t kIrqInfoFlagEventfd = 1u << 0;
inline constexpr uint32_t kIrqInfoFlagMaskable = 1u << 1;
inline constexpr uint32_t kIrqInfoFlagAutomasked = 1u << 2;
inline constexpr uint32_t kIrqInfoFlagNoresize = 1u << 3;
inline constexpr uint32_t kIrqInfoSize = 16;
struct IrqInfoPayload {
  uint32_t argsz = 0, flags = 0, index = 0, count = 0;
};
std::optional<IrqInfoPayload> decode_irq_info(std::span<const uint8_t> p);
std::vector<uint8_t> encode_irq_info(const IrqInfoPayload& i);

// ---- DEVICE_SET_IRQS (struct vfio_irq_set) ---------------------------------------------------
inline constexpr uint32_t kIrqSetDataNone = 1u << 0;
inline constexpr uint32_t kIrqSetDataBool = 1u << 1;
inline constexpr uint32_t kIrqSetDataEventfd = 1u << 2;
inline constexpr uint32_t kIrqSetDataMask = 0x7;
inline constexpr uint32_t kIrqSetActionMask = 1u << 3;
inline constexpr uint32_t kIrqSetActionUnmask = 1u << 4;
inline constexpr uint32_t kIrqSetActionTrigger = 1u << 5;
inline constexpr uint32_t kIrqSetActionMaskAll = 0x38;
inline constexpr uint32_t kIrqSetFixedSize = 20;
struct IrqSetPayload {
  uint32_t argsz = 0, flags = 0, index = 0, start = 0, count = 0;
  std::span<const uint8_t> data;  // bytes after the fixed part (DATA_BOOL: one byte per vector)
};
std::optional<IrqSetPayload> decode_irq_set(std::span<const uint8_t> p);
std::vector<uint8_t> encode_irq_set(const IrqSetPayload& s);

// ---- REGION_READ / REGION_WRITE --------------------------------------------------------------
inline constexpr uint32_t kRegionAccessFixedSize = 16;  // offset u64, region u32, count u32, data[]
struct RegionAccessPayload {
  uint64_t offset = 0;
  uint32_t region = 0, count = 0;
  std::span<const uint8_t> data;  // whatever follows the fixed part
};
std::optional<RegionAccessPayload> decode_region_access(std::span<const uint8_t> p);
std::vector<uint8_t> encode_region_access(uint64_t offset, uint32_t region, uint32_t count,
                                          std::span<const uint8_t> data);

// ---- DMA_READ / DMA_WRITE (server -> client) -------------------------------------------------
// THE ONE PLACE that knows this layout. QEMU (hw/vfio-user/protocol.h, VFIOUserDMARW, unchanged
// through QEMU 11) declares { hdr; u64 offset; u32 count; char data[]; } without packing, so:
//   * `count` is a u32 at byte 24, the data starts at byte 28 (offsetof data), and
//   * sizeof(VFIOUserDMARW) is 32 (4 bytes of tail padding), which QEMU uses for every size check:
//     a request shorter than 32 bytes is refused with EINVAL; a DMA_WRITE must have
//     size >= 32 + count; a DMA_READ reply is 32 + count bytes long with the data at byte 28
//     (the last 4 bytes are padding).
// The spec/libvfio-user layout (u64 count, data at byte 32) differs; a spec-layout DMA_WRITE
// would be written 4 bytes early by QEMU. We therefore speak QEMU's layout: requests carry
// count as a u32 at 24, 4 zero bytes at 28..31 are the padding *and* (for DMA_WRITE) the data
// starts at 28, the message is 32 + count bytes, and replies are parsed with data at 28.
// A DMA_WRITE reply is header-only in QEMU; we accept any reply length for it.
inline constexpr uint32_t kDmaRwAddrOffset = 16;
inline constexpr uint32_t kDmaRwCountOffset = 24;  // u32
inline constexpr uint32_t kDmaRwDataOffset = 28;
inline constexpr uint32_t kDmaRwFixedSize = 32;  // sizeof(VFIOUserDMARW) in QEMU
std::vector<uint8_t> build_dma_read_request(uint16_t msg_id, uint64_t addr, uint32_t count);
std::vector<uint8_t> build_dma_write_request(uint16_t msg_id, uint64_t addr, std::span<const uint8_t> data);
// Parses a whole DMA_READ reply message (header included). Returns the data span when the reply
// echoes `addr`/`count` and carries count bytes at the data offset.
std::optional<std::span<const uint8_t>> parse_dma_read_reply(std::span<const uint8_t> msg, uint64_t addr,
                                                             uint32_t count);
// Parses a whole DMA_READ/DMA_WRITE *request* (the client side of the exchange, for tests).
struct DmaRwRequest {
  uint64_t addr = 0;
  uint32_t count = 0;
  std::span<const uint8_t> data;  // DMA_WRITE only
};
std::optional<DmaRwRequest> parse_dma_request(std::span<const uint8_t> msg);
// Builds the client's DMA_READ reply in QEMU's layout.
std::vector<uint8_t> build_dma_read_reply(const Header& request, uint64_t addr, std::span<const uint8_t> data);

// ---- Capabilities we advertise ---------------------------------------------------------------
inline constexpr uint32_t kMaxMsgFds = 16;
inline constexpr uint32_t kMaxDataXferSize = 1u << 20;
inline constexpr uint32_t kPgSizes = 4096;
// Per connection, and advertised in VERSION: the functions of one hcaemu together stay well under
// the kernel's vm.max_map_count (65,530 by default), which 65,535 maps of one client alone exceeded.
inline constexpr uint32_t kMaxDmaMaps = 4096;
// Per connection: the address space its fd-backed maps may take (the guest RAM QEMU shares).
inline constexpr uint64_t kMaxDmaMappedBytes = uint64_t(1) << 40;

}  // namespace hcaemu::vfio_user
