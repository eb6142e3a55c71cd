#pragma once
// A function with simulated host memory and MSI-X, its firmware, and small builders for the
// resource commands (inputs laid out per mlx5-layouts.md): the command side of a headless host's
// driver. Commands go to the firmware directly (no command queue, no SystemC kernel).
#include <algorithm>
#include <string>
#include <vector>

#include "common/endian.h"
#include "hostsim/check.h"
#include "hostsim/sim_host_memory.h"
#include "model/firmware/firmware.h"

namespace hcaemu::hostsim {

using namespace model;

struct HostFunction {
  static constexpr uint64_t kRamBase = 0x100000;
  static constexpr uint64_t kDefaultMemory = 16 << 20;
  SimHostMemory memory;
  RecordingMsix msix;
  FunctionContext f;
  Firmware fw{f};
  std::vector<uint8_t> out;
  uint64_t next_page = kRamBase + 0x10000;

  explicit HostFunction(uint64_t memory_bytes = kDefaultMemory) : memory(kRamBase, memory_bytes) {
    f.attach_memory(&memory);
    f.msix = &msix;
    f.bar0_size = 32 << 20;
    f.identity.lay_out_bar0(f.bar0_size);
    f.place_device_memory();
  }

  static std::vector<uint8_t> input(size_t size) { return std::vector<uint8_t>(size, 0); }

  uint8_t run(uint16_t opcode, std::vector<uint8_t> in = {}, uint32_t outlen = 16, uint16_t op_mod = 0) {
    in.resize(std::max<size_t>(in.size(), 16), 0);
    store_be16(&in[0], opcode);
    store_be16(&in[6], op_mod);
    CommandRequest r{opcode, op_mod, in, outlen};
    fw.execute(r, out);
    return out[0];
  }
  uint32_t out32(uint32_t offset) const { return load_be32(&out[offset]); }
  uint32_t object() const { return out32(0x08) & 0xffffff; }

  uint64_t page(uint64_t bytes = 4096) {  // page-aligned host memory
    const uint64_t address = next_page;
    next_page += (bytes + 4095) & ~uint64_t(4095);
    check(next_page <= memory.base() + memory.size(), "host memory exhausted");
    return address;
  }

  uint32_t alloc(uint16_t opcode) {
    check(run(opcode) == 0, "command " + std::to_string(opcode) + " failed");
    return object();
  }

  static void put_pas(std::vector<uint8_t>& in, uint32_t offset, const std::vector<uint64_t>& pages) {
    in.resize(std::max<size_t>(in.size(), offset + 8 * pages.size()), 0);
    for (size_t i = 0; i < pages.size(); ++i) store_be64(&in[offset + 8 * i], pages[i]);
  }

  std::vector<uint8_t> eq_input(uint32_t log_size, uint32_t uar, uint32_t vector, uint64_t mask0,
                                const std::vector<uint64_t>& pages) {
    auto in = input(0x110);
    store_be32(&in[0x10 + 0x0c], (log_size << 24) | uar);
    store_be32(&in[0x10 + 0x14], vector);
    store_be64(&in[0x58], mask0);
    put_pas(in, 0x110, pages);
    return in;
  }
  uint32_t create_eq(uint32_t log_size, uint32_t uar, uint32_t vector, uint64_t mask0, const std::vector<uint64_t>& pages) {
    check(run(0x301, eq_input(log_size, uar, vector, mask0, pages)) == 0, "CREATE_EQ");
    return out32(0x08) & 0xff;
  }

  std::vector<uint8_t> cq_input(uint32_t log_size, uint32_t uar, uint32_t eqn, uint64_t dbr,
                                const std::vector<uint64_t>& pages) {
    auto in = input(0x110);
    store_be32(&in[0x10 + 0x0c], (log_size << 24) | uar);
    store_be32(&in[0x10 + 0x14], eqn);
    store_be64(&in[0x10 + 0x38], dbr);
    put_pas(in, 0x110, pages);
    return in;
  }
  uint32_t create_cq(uint32_t log_size, uint32_t uar, uint32_t eqn, uint64_t dbr, const std::vector<uint64_t>& pages) {
    check(run(0x400, cq_input(log_size, uar, eqn, dbr, pages)) == 0, "CREATE_CQ");
    return object();
  }

  std::vector<uint8_t> read(uint64_t address, size_t size) {
    std::vector<uint8_t> bytes(size);
    check(memory.read(address, bytes), "host memory read");
    return bytes;
  }
};

}  // namespace hcaemu::hostsim
