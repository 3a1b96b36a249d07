#include "shim/record/stack_capture.h"

#include <dlfcn.h>
#include <execinfo.h>

#include <atomic>

#include "common/config.h"
#include "shim/base/hook_table.h"
#include "shim/base/self_module.h"

namespace gpumemrec {

namespace {

using BacktraceFn = int (*)(void**, int);
std::atomic<BacktraceFn> g_backtrace{nullptr};
const char* g_backend = "none";

int glibc_backtrace(void** buf, int n) { return backtrace(buf, n); }

}  // namespace

void stack_capture_init() {
  if (g_backtrace.load()) return;
  self_module_init();
  BacktraceFn fn = nullptr;
#if defined(__SANITIZE_THREAD__)
  // Under ThreadSanitizer libunwind's per-thread cache destructor runs after
  // TSan has torn down the exiting thread's state and crashes in TSan's mutex
  // interceptor; the TSan build uses glibc's unwinder instead.
  const bool try_libunwind = false;
#else
  const bool try_libunwind = true;
#endif
  if (void* h = try_libunwind ? dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL) : nullptr) {
    fn = reinterpret_cast<BacktraceFn>(real_dlsym()(h, "unw_backtrace"));
    if (fn) g_backend = "libunwind";
  }
  // Prime glibc's unwinder now (its first call loads libgcc_s): it is the
  // fallback here and the unwinder of forked children.
  void* tmp[2];
  backtrace(tmp, 2);
  if (!fn) {
    fn = glibc_backtrace;
    g_backend = "glibc backtrace";
  }
  g_backtrace.store(fn, std::memory_order_release);
}

const char* stack_capture_backend() { return g_backend; }

void stack_capture_after_fork() {
  if (g_backtrace.load(std::memory_order_acquire) == nullptr) return;  // stacks off
  g_backtrace.store(glibc_backtrace, std::memory_order_release);
  g_backend = "glibc backtrace";
}

uint32_t capture_native_stack(uint64_t* out, int depth) {
  BacktraceFn fn = g_backtrace.load(std::memory_order_acquire);
  if (!fn || depth <= 0) return 0;
  if (depth > kMaxStackDepth) depth = kMaxStackDepth;  // the caller's buffer holds kMaxStackDepth
  constexpr int kSlack = 8;  // our own frames, skipped below
  void* buf[kMaxStackDepth + kSlack];
  int want = depth + kSlack;
  if (want > int(sizeof buf / sizeof buf[0])) want = int(sizeof buf / sizeof buf[0]);
  int n = fn(buf, want);
  int i = 0;
  while (i < n && address_in_self(reinterpret_cast<uint64_t>(buf[i]))) ++i;
  uint32_t out_n = 0;
  for (; i < n && int(out_n) < depth; ++i) out[out_n++] = reinterpret_cast<uint64_t>(buf[i]);
  return out_n;
}

}  // namespace gpumemrec
