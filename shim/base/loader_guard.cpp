#include "shim/base/loader_guard.h"

#include <dlfcn.h>
#include <time.h>

#include <atomic>

namespace gpumemrec {

namespace {
std::atomic<int> g_in_flight{0};
}  // namespace

void* guarded_dlopen(const char* name, int flags) {
  g_in_flight.fetch_add(1, std::memory_order_acq_rel);
  void* h = dlopen(name, flags);
  g_in_flight.fetch_sub(1, std::memory_order_acq_rel);
  return h;
}

void loader_guard_before_fork() {
  struct timespec tick = {0, 100000};  // 0.1 ms
  for (unsigned waited = 0; g_in_flight.load(std::memory_order_acquire) > 0 && waited < kForkWaitMs * 10; ++waited)
    nanosleep(&tick, nullptr);
}

}  // namespace gpumemrec
