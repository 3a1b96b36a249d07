#include "shim/record/stack_capture.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#include <atomic>

#include "shim/base/hook_table.h"

namespace gpumemrec {

namespace {

using BacktraceFn = int (*)(void**, int);
std::atomic<BacktraceFn> g_backtrace{nullptr};
const char* g_backend = "none";
uint64_t g_shim_start = 0, g_shim_end = 0;

int find_self(struct dl_phdr_info* info, size_t, void* data) {
  auto self = reinterpret_cast<uint64_t>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t start = info->dlpi_addr + ph.p_vaddr, end = start + ph.p_memsz;
    if (self >= start && self < end) {
      // The whole object: from its lowest to its highest loadable segment.
      uint64_t lo = UINT64_MAX, hi = 0;
      for (int j = 0; j < info->dlpi_phnum; ++j) {
        const ElfW(Phdr)& q = info->dlpi_phdr[j];
        if (q.p_type != PT_LOAD) continue;
        uint64_t s = info->dlpi_addr + q.p_vaddr;
        if (s < lo) lo = s;
        if (s + q.p_memsz > hi) hi = s + q.p_memsz;
      }
      g_shim_start = lo;
      g_shim_end = hi;
      return 1;
    }
  }
  return 0;
}

int glibc_backtrace(void** buf, int n) { return backtrace(buf, n); }

}  // namespace

void stack_capture_init() {
  if (g_backtrace.load()) return;
  dl_iterate_phdr(find_self, reinterpret_cast<void*>(&stack_capture_init));
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

bool address_in_shim(uint64_t ip) { return ip >= g_shim_start && ip < g_shim_end; }

uint32_t capture_native_stack(uint64_t* out, int depth) {
  BacktraceFn fn = g_backtrace.load(std::memory_order_acquire);
  if (!fn || depth <= 0) return 0;
  constexpr int kSlack = 8;  // our own frames, skipped below
  void* buf[256 + kSlack];
  int want = depth + kSlack;
  if (want > int(sizeof buf / sizeof buf[0])) want = int(sizeof buf / sizeof buf[0]);
  int n = fn(buf, want);
  int i = 0;
  while (i < n && address_in_shim(reinterpret_cast<uint64_t>(buf[i]))) ++i;
  uint32_t out_n = 0;
  for (; i < n && int(out_n) < depth; ++i) out[out_n++] = reinterpret_cast<uint64_t>(buf[i]);
  return out_n;
}

}  // namespace gpumemrec
