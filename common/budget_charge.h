#pragma once
// One holder's share of a bounded amount (hcaemu memory a guest made a function hold): the charge
// adds its amount to the shared `used` counter when taken and gives it back when it goes, however
// its holder goes (a DESTROY command, a queue resized, a reset clearing whole tables), so no path
// can forget the refund. A copy holds its own share (the counter counts every living holder); the
// counter must outlive every charge against it.
#include <algorithm>
#include <cstdint>
#include <utility>

namespace hcaemu {

class BudgetCharge {
 public:
  BudgetCharge() = default;
  BudgetCharge(uint64_t& used, uint64_t amount) : used_(&used), amount_(amount) { used += amount; }
  BudgetCharge(BudgetCharge&& other) noexcept
      : used_(std::exchange(other.used_, nullptr)), amount_(std::exchange(other.amount_, 0)) {}
  BudgetCharge& operator=(BudgetCharge&& other) noexcept {
    if (this != &other) {
      release();
      used_ = std::exchange(other.used_, nullptr);
      amount_ = std::exchange(other.amount_, 0);
    }
    return *this;
  }
  BudgetCharge(const BudgetCharge& other) : used_(other.used_), amount_(other.amount_) {
    if (used_ != nullptr) *used_ += amount_;
  }
  BudgetCharge& operator=(const BudgetCharge& other) {
    if (this != &other) *this = BudgetCharge(other);
    return *this;
  }
  ~BudgetCharge() { release(); }

  uint64_t amount() const { return amount_; }

 private:
  void release() {
    if (used_ != nullptr) *used_ -= std::min(*used_, amount_);
    used_ = nullptr;
    amount_ = 0;
  }
  uint64_t* used_ = nullptr;
  uint64_t amount_ = 0;
};

}  // namespace hcaemu
