#include "testbench/systemc/host_model.h"

#include <array>

namespace hcaemu::testbench {

SystemCHost& SystemCHost::instance() {
  static SystemCHost host;
  return host;
}

SystemCHost::SystemCHost() {
  sriov::DeviceConfig config;
  config.total_vfs = 4;
  device_ = std::make_unique<sriov::HcaDevice>("hca", config);
  queue_ = std::make_unique<bridge::KernelQueue>("host_queue");
  using Routing = sriov::FunctionFace::MsixRouting;
  device_->pf().attach_host(&ram_, &msix_, Routing::kThroughTable);
  for (unsigned i = 0; i < device_->vf_ports(); ++i) device_->vf(i).attach_host(&ram_, &msix_, Routing::kThroughTable);
}

void SystemCHost::run(std::function<void()> driver) {
  queue_->post([driver = std::move(driver)] {
    driver();
    sc_core::sc_pause();
  });
  sc_core::sc_start();
}

uint32_t SystemCHost::cfg_read(sriov::FunctionFace& f, uint32_t offset, unsigned size) {
  std::array<uint8_t, 4> b{};
  f.config_read(offset, std::span(b.data(), size));
  return load_le32(b.data());
}

void SystemCHost::cfg_write(sriov::FunctionFace& f, uint32_t offset, unsigned size, uint32_t value) {
  std::array<uint8_t, 4> b{};
  store_le32(b.data(), value);
  f.config_write(offset, std::span<const uint8_t>(b.data(), size));
}

uint32_t SystemCHost::reg_read(sriov::FunctionFace& f, uint64_t offset) {
  std::array<uint8_t, 4> b{};
  f.bar_read(0, offset, b);
  return load_be32(b.data());
}

void SystemCHost::reg_write(sriov::FunctionFace& f, uint64_t offset, uint32_t value) {
  std::array<uint8_t, 4> b{};
  store_be32(b.data(), value);
  f.bar_write(0, offset, b);
}

uint16_t SystemCHost::find_capability(sriov::FunctionFace& f, uint8_t id) {
  if ((cfg_read(f, 0x06, 2) & 0x10) == 0) return 0;
  uint8_t pos = uint8_t(cfg_read(f, 0x34, 1));
  for (int ttl = 48; ttl > 0 && pos >= 0x40; --ttl) {
    pos &= ~3;
    uint16_t ent = uint16_t(cfg_read(f, pos, 2));
    if ((ent & 0xff) == 0xff) break;
    if ((ent & 0xff) == id) return pos;
    pos = uint8_t(ent >> 8);
  }
  return 0;
}

uint16_t SystemCHost::find_ext_capability(sriov::FunctionFace& f, uint16_t id) {
  uint16_t pos = 0x100;
  for (int ttl = (4096 - 256) / 8; ttl > 0; --ttl) {
    uint32_t header = cfg_read(f, pos, 4);
    if (header == 0 || header == 0xffffffff) return 0;
    if ((header & 0xffff) == id) return pos;
    pos = uint16_t(header >> 20);
    if (pos < 0x100) return 0;
  }
  return 0;
}

uint64_t SystemCHost::size_bar(sriov::FunctionFace& f, unsigned index, uint32_t* flags) {
  const uint32_t reg = 0x10 + 4 * index;
  uint32_t saved = cfg_read(f, reg, 4);
  cfg_write(f, reg, 4, 0xffffffff);
  uint32_t low = cfg_read(f, reg, 4);
  cfg_write(f, reg, 4, saved);
  if (flags) *flags = low & 0xf;
  if (low == 0) return 0;
  uint64_t mask = low & ~0xfull;
  if ((low & 0x6) == 0x4) {  // 64-bit: the upper register sizes too
    uint32_t saved_high = cfg_read(f, reg + 4, 4);
    cfg_write(f, reg + 4, 4, 0xffffffff);
    mask |= uint64_t(cfg_read(f, reg + 4, 4)) << 32;
    cfg_write(f, reg + 4, 4, saved_high);
  } else {
    mask |= 0xffffffff00000000ull;
  }
  return ~mask + 1;
}

}  // namespace hcaemu::testbench

// libsystemc wants an sc_main; GoogleTest's main drives the kernel instead (through run()).
int sc_main(int, char**) { return 0; }
