#pragma once
// The mkc fields the model reads (mlx5-layouts.md `mkc`), one list for CREATE/QUERY_MKEY
// (firmware/mkey_srq.cpp) and the MKEY segment of UMR WQEs (objects/umr.cpp), which has mkc's
// layout. Offsets are inside the mkc; within(field, base) places a field in a structure that
// embeds the mkc at `base`.
#include <cstdint>

#include "model/prm/bits.h"

namespace hcaemu::model::mkc {

inline constexpr Field kFree{0x00, 30, 30};
inline constexpr Field kAccessMode42{0x00, 28, 26};
inline constexpr Field kUmrEn{0x00, 15, 15};
inline constexpr Field kAtomic{0x00, 14, 14};
inline constexpr Field kRemoteWrite{0x00, 13, 13};
inline constexpr Field kRemoteRead{0x00, 12, 12};
inline constexpr Field kLocalWrite{0x00, 11, 11};
inline constexpr Field kLocalRead{0x00, 10, 10};
inline constexpr Field kAccessMode10{0x00, 9, 8};
inline constexpr Field kVariant{0x04, 7, 0};   // mkey_7_0
inline constexpr Field kLength64{0x0c, 31, 31};
inline constexpr Field kBsfEn{0x0c, 30, 30};               // a signature key: room for a BSF
inline constexpr Field kExpectedSigerrCount{0x0c, 26, 26};  // the UMR segment's sig err count too
inline constexpr Field kEnRinval{0x0c, 24, 24};
inline constexpr Field kPd{0x0c, 23, 0};
inline constexpr uint32_t kStartAddr = 0x10;
inline constexpr uint32_t kLen = 0x18;
inline constexpr Field kBsfOctwordSize{0x20, 31, 0};
inline constexpr Field kTranslationsOctwordSize{0x34, 31, 0};
inline constexpr Field kLogPageSize{0x38, 4, 0};  // absolute

constexpr Field within(Field field, uint32_t base) { return {field.offset + base, field.hi, field.lo}; }

}  // namespace hcaemu::model::mkc
