// MAD_IFC: the driver hands the "firmware's SMA" a management datagram. An Ethernet (RoCE) port has
// no subnet management agent, so every MAD gets a well-formed GetResp carrying the IBA status
// "unsupported method/attribute" (IBA 13.4.7), which the 6.1 driver takes as "no extended port
// capabilities" instead of failing its probe.
#include <algorithm>

#include "common/endian.h"
#include "model/firmware/firmware.h"

namespace hcaemu::model {
namespace {

constexpr uint16_t kMadIfc = 0x50d;
constexpr uint32_t kMadOffset = 0x10;   // mad_ifc_in.mad / mad_ifc_out.response_mad_packet
constexpr uint32_t kMadSize = 0x100;
constexpr uint32_t kMadMethod = 3;      // common MAD header: method byte
constexpr uint32_t kMadStatus = 4;      // BE16 status
constexpr uint8_t kMethodResponseBit = 0x80;
constexpr uint16_t kStatusUnsupportedMethodAttribute = 0x000c;

void mad_ifc(CommandCall& call) {
  if (!call.need_input(kMadOffset + kMadSize) || !call.need_output(kMadOffset + kMadSize)) return;
  auto response = call.out().subspan(kMadOffset, kMadSize);
  const auto request = call.in().subspan(kMadOffset, kMadSize);
  std::copy(request.begin(), request.end(), response.begin());
  response[kMadMethod] = uint8_t(request[kMadMethod] | kMethodResponseBit);
  store_be16(&response[kMadStatus], kStatusUnsupportedMethodAttribute);
}

}  // namespace

void register_mad_commands(CommandTable& table) { table.add(kMadIfc, "MAD_IFC", mad_ifc); }

}  // namespace hcaemu::model
