#include "shim/record/stack_capture.h"

#include <dlfcn.h>
#include <execinfo.h>

#include <atomic>
#include <string>

#include "common/config.h"
#include "shim/base/hook_table.h"
#include "shim/base/log.h"
#include "shim/base/self_module.h"
#include "shim/record/unwind_guard.h"

namespace gpumemrec {

namespace {

using BacktraceFn = int (*)(void**, int);
std::atomic<BacktraceFn> g_backtrace{nullptr};
const char* g_backend = "none";
UnwindGuard g_guard;  // whether a forked child may keep libunwind (unwind_guard.h)

int glibc_backtrace(void** buf, int n) { return backtrace(buf, n); }

// The copy installed beside this library (bin/, an install's
// lib/gpumemrec/, the wheel's _native/), with the liblzma.so.5 beside it
// only where the system has none: loaded first, it would be the one that
// any later library needing liblzma.so.5 gets. glibc's loader answers a
// name with an object already loaded under that soname, RTLD_LOCAL or not
// (elf/dl-load.c, _dl_map_object's walk of the loaded objects; checked
// here: libunwind.so.8 opened by path, then by soname, is one object).
// That same match makes the bundled libunwind's DT_NEEDED find the bundled
// liblzma.
void* open_bundled_libunwind() {
  const std::string dir = self_module_dir();
  if (dir.empty()) return nullptr;
  if (!dlopen("liblzma.so.5", RTLD_NOW | RTLD_LOCAL)) dlopen((dir + "/liblzma.so.5").c_str(), RTLD_NOW | RTLD_LOCAL);
  return dlopen((dir + "/libunwind.so.8").c_str(), RTLD_NOW | RTLD_LOCAL);
}

// Whether the program had loaded libunwind.so.8 before us (its threads may
// then hold libunwind's locks at a fork: unwind_guard.h). The bundled copy
// has the same soname, so one look covers both.
bool libunwind_already_loaded() {
  void* h = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

void* open_libunwind(Unwinder which) {
  if (which == Unwinder::kAuto || which == Unwinder::kSystem) {
    if (void* h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL)) {
      g_backend = "libunwind";
      return h;
    }
  }
  if (which == Unwinder::kAuto || which == Unwinder::kBundled) {
    if (void* h = open_bundled_libunwind()) {
      g_backend = "libunwind (bundled)";
      return h;
    }
  }
  return nullptr;
}

}  // namespace

void stack_capture_init(Unwinder which) {
  if (g_backtrace.load()) return;
  self_module_init();
  BacktraceFn fn = nullptr;
#if defined(__SANITIZE_THREAD__)
  // Under ThreadSanitizer libunwind's per-thread cache destructor runs after
  // TSan has torn down the exiting thread's state and crashes in TSan's mutex
  // interceptor; the TSan build uses glibc's unwinder instead.
  which = Unwinder::kGlibc;
#endif
  const bool shared = which != Unwinder::kGlibc && libunwind_already_loaded();
  if (void* h = which == Unwinder::kGlibc ? nullptr : open_libunwind(which))
    fn = reinterpret_cast<BacktraceFn>(real_dlsym()(h, "unw_backtrace"));
  if (fn) g_guard.init(shared);
  // Prime glibc's unwinder now (its first call loads libgcc_s): it is the
  // fallback here and the unwinder of forked children.
  void* tmp[2];
  backtrace(tmp, 2);
  if (!fn) {
    fn = glibc_backtrace;
    g_backend = "glibc backtrace";
    if (which != Unwinder::kGlibc)
      GM_WARN("libunwind.so.8 could not be loaded ({}): native stacks use glibc's backtrace, about 10x slower per "
              "recorded call; install libunwind8, or set GPUMEMREC_STACK_DEPTH=0 for no native stacks",
              which == Unwinder::kSystem    ? "GPUMEMREC_UNWINDER=system: the system has none"
              : which == Unwinder::kBundled ? "GPUMEMREC_UNWINDER=bundled: none beside libgpumemrec.so"
                                            : "neither on the system nor beside libgpumemrec.so");
  }
  g_backtrace.store(fn, std::memory_order_release);
}

const char* stack_capture_backend() { return g_backend; }

void stack_capture_before_fork() { g_guard.before_fork(); }
void stack_capture_after_fork_parent() { g_guard.after_fork_parent(); }

void stack_capture_after_fork() {
  const BacktraceFn fn = g_backtrace.load(std::memory_order_acquire);
  if (fn == nullptr) return;  // stacks off
  const bool keep = g_guard.after_fork_child();  // always: it clears the child's flag and counts
  if (fn == glibc_backtrace || keep) return;
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
  int n;
  if (fn == glibc_backtrace) {
    n = fn(buf, want);
  } else if (g_guard.enter()) {
    n = fn(buf, want);
    g_guard.leave();
  } else {
    n = glibc_backtrace(buf, want);  // a fork is under way: not into libunwind now
  }
  int i = 0;
  while (i < n && address_in_self(reinterpret_cast<uint64_t>(buf[i]))) ++i;
  uint32_t out_n = 0;
  for (; i < n && int(out_n) < depth; ++i) out[out_n++] = reinterpret_cast<uint64_t>(buf[i]);
  return out_n;
}

}  // namespace gpumemrec
