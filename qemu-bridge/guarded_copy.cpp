// A process-wide SIGBUS handler that jumps back into the guarded copy running on the faulting
// thread. The handler is installed with SA_NODEFER, so leaving it by siglongjmp leaves SIGBUS
// unblocked, and the jump buffer need not save the signal mask (no system call per copy).
#include "qemu-bridge/guarded_copy.h"

#include <csetjmp>
#include <csignal>
#include <cstring>
#include <atomic>
#include <mutex>

namespace hcaemu::vfio_user {

namespace {

// Set while this thread copies guarded memory. Volatile: the compiler must not drop the store
// before the memcpy as dead (only the signal handler reads it).
thread_local sigjmp_buf* volatile t_guard = nullptr;

void on_sigbus(int, siginfo_t*, void*) {
  if (sigjmp_buf* guard = t_guard) {
    t_guard = nullptr;
    siglongjmp(*guard, 1);
  }
  // Not a guarded copy: a bug of ours. Default action; returning re-runs the faulting access.
  std::signal(SIGBUS, SIG_DFL);
}

void install_handler() {
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, nullptr);
}

}  // namespace

bool guarded_copy(void* dst, const void* src, size_t n) {
  static std::once_flag installed;
  std::call_once(installed, install_handler);
  sigjmp_buf guard;
  if (sigsetjmp(guard, 0) != 0) return false;  // back from the handler: a page was gone
  t_guard = &guard;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(dst, src, n);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_guard = nullptr;
  return true;
}

}  // namespace hcaemu::vfio_user
