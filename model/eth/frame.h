#pragma once
// What the Ethernet data path needs to know about a frame's bytes: the header walk and checksums
// of transport/ethernet.h, and the flow steering match key (fte_match_set_lyr_2_4 of the outer
// headers), which is mlx5's layout and so the model's.
#include <array>
#include <cstdint>
#include <span>

#include "transport/ethernet.h"

namespace hcaemu::model::frame {

using namespace transport::ethernet;

// fte_match_set_lyr_2_4 (0x40 bytes) of the frame's outer headers.
std::array<uint8_t, 0x40> outer_match_key(std::span<const uint8_t> frame, const Parsed& p);

}  // namespace hcaemu::model::frame
