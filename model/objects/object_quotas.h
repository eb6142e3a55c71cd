#pragma once
// How many objects of each kind one function may hold, as powers of two: the host admin's
// per-function quota (hcaemu's configuration, pf/vf.log_max_*). The function's caps report them
// (log_max_qp, log_max_cq, log_max_mkey, log_max_srq) and creating one more fails with the PRM's
// exceeded-limit status. The defaults are the device's maxima; a quota bounds the memory a guest
// can make hcaemu hold in object contexts.
#include <cstdint>

namespace hcaemu::model {

struct ObjectQuotas {
  static constexpr uint32_t kMaxLogQp = 17, kMaxLogCq = 16, kMaxLogMkey = 16, kMaxLogSrq = 16;
  static constexpr uint32_t kMinLog = 8;  // mlx5_core, mlx5e and mlx5_ib need a few hundred of each
  uint32_t log_max_qp = kMaxLogQp;
  uint32_t log_max_cq = kMaxLogCq;
  uint32_t log_max_mkey = kMaxLogMkey;
  uint32_t log_max_srq = kMaxLogSrq;
};

}  // namespace hcaemu::model
