// Function lifecycle commands (mlx5-device-bringup.md sections 4.1 and 5): ENABLE_HCA/DISABLE_HCA,
// QUERY_ISSI/SET_ISSI, QUERY_PAGES/MANAGE_PAGES. Page management: the model keeps its state in its
// own memory and never asks the host for pages, so it reports 0 pages to give, accepts (and
// returns on TAKE) whatever the driver gives anyway.
#include "model/firmware/firmware.h"

namespace hcaemu::model {
namespace {

constexpr uint16_t kEnableHca = 0x104, kDisableHca = 0x105, kQueryPages = 0x107, kManagePages = 0x108;
constexpr uint16_t kQueryIssi = 0x10a, kSetIssi = 0x10b;

// Input fields shared by ENABLE_HCA, DISABLE_HCA, QUERY_PAGES and MANAGE_PAGES.
constexpr Field kEmbeddedCpuFunction{0x08, 31, 31};
constexpr Field kFunctionId{0x08, 15, 0};

constexpr Field kIssiCurrent{0x08, 15, 0};
constexpr Field kIssiSupportedDw0{0x6c, 31, 0};
constexpr uint32_t kQueryIssiOutSize = 0x70;
constexpr uint32_t kSupportedIssiMask = 0x3;  // ISSI 0 and 1

constexpr Field kPagesOutFunctionId{0x08, 15, 0};
constexpr Field kPagesOutNumPages{0x0c, 31, 0};
constexpr Field kManageInEntries{0x0c, 31, 0};
constexpr Field kManageOutEntries{0x08, 31, 0};
constexpr uint32_t kPasOffset = 0x10;
enum ManagePagesOpMod : uint16_t { kCantGive = 0, kGive = 1, kTake = 2 };
constexpr uint32_t kMaxPagesHeld = 1u << 20;

// A function addresses only itself: function_id 0 and no embedded-CPU function (what a VF, and a
// PF without an eswitch, always sends). Anything else would reach another function.
bool targets_self(CommandCall& call) {
  if (get(call.in(), kEmbeddedCpuFunction) == 0 && get(call.in(), kFunctionId) == 0) return true;
  call.fail(CommandStatus::kBadParameter, syndrome(call.opcode(), 0x01));
  return false;
}

void enable_hca(CommandCall& call) {
  if (!call.need_input(0x10) || !targets_self(call)) return;
  call.function().hca_enabled = true;
}

void disable_hca(CommandCall& call) {
  if (!call.need_input(0x10) || !targets_self(call)) return;
  call.function().reset_objects();  // DISABLE_HCA releases everything the function had
}

void query_issi(CommandCall& call) {
  if (!call.need_output(kQueryIssiOutSize)) return;
  set(call.out(), kIssiCurrent, call.function().issi);
  set(call.out(), kIssiSupportedDw0, kSupportedIssiMask);
}

void set_issi(CommandCall& call) {
  if (!call.need_input(0x10)) return;
  const uint32_t issi = get(call.in(), kIssiCurrent);
  if (issi >= 32 || ((kSupportedIssiMask >> issi) & 1) == 0) {
    call.fail(CommandStatus::kBadParameter, syndrome(kSetIssi, 0x01));
    return;
  }
  call.function().issi = uint16_t(issi);
}

void query_pages(CommandCall& call) {
  if (!call.need_input(0x10) || !call.need_output(0x10)) return;
  if (call.op_mod() < 1 || call.op_mod() > 3) {  // 1 boot, 2 init, 3 regular
    call.fail(CommandStatus::kBadParameter, syndrome(kQueryPages, 0x01));
    return;
  }
  set(call.out(), kPagesOutFunctionId, 0);
  set(call.out(), kPagesOutNumPages, 0);
}

void manage_pages(CommandCall& call) {
  if (!call.need_input(0x10) || !call.need_output(0x10) || !targets_self(call)) return;
  FunctionContext& f = call.function();
  const uint32_t entries = get(call.in(), kManageInEntries);
  switch (call.op_mod()) {
    case kCantGive:
      return;
    case kGive:
      if (entries > kMaxPagesHeld || call.in().size() < kPasOffset + uint64_t(entries) * 8 ||
          f.pages.size() + entries > kMaxPagesHeld) {
        call.fail(CommandStatus::kBadInputLength, syndrome(kManagePages, 0x01));
        return;
      }
      for (uint32_t i = 0; i < entries; ++i) {
        if (get64(call.in(), kPasOffset + 8 * i) & 0xfff) {  // pages are 4 KiB aligned
          call.fail(CommandStatus::kBadParameter, syndrome(kManagePages, 0x02));
          return;
        }
      }
      for (uint32_t i = 0; i < entries; ++i) f.pages.push_back(get64(call.in(), kPasOffset + 8 * i));
      return;
    case kTake: {
      // Hand back the most recently given pages, by address: the driver frees what we list.
      const uint32_t returned = uint32_t(std::min<uint64_t>(entries, f.pages.size()));
      if (call.out().size() < kPasOffset + uint64_t(returned) * 8) {
        call.fail(CommandStatus::kBadOutputLength, syndrome(kManagePages, 0x03));
        return;
      }
      for (uint32_t i = 0; i < returned; ++i) {
        set64(call.out(), kPasOffset + 8 * i, f.pages.back());
        f.pages.pop_back();
      }
      set(call.out(), kManageOutEntries, returned);
      return;
    }
    default:
      call.fail(CommandStatus::kBadParameter, syndrome(kManagePages, 0x04));
  }
}

}  // namespace

void register_lifecycle_commands(CommandTable& table) {
  table.add(kEnableHca, "ENABLE_HCA", enable_hca);
  table.add(kDisableHca, "DISABLE_HCA", disable_hca);
  table.add(kQueryIssi, "QUERY_ISSI", query_issi, Senders::kUser);
  table.add(kSetIssi, "SET_ISSI", set_issi);
  table.add(kQueryPages, "QUERY_PAGES", query_pages);
  table.add(kManagePages, "MANAGE_PAGES", manage_pages);
}

}  // namespace hcaemu::model
