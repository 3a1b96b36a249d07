// Finding the real functions behind our hooks.
//
// Lifetime hazards, in order of appearance:
// - Our exported `dlsym` replaces glibc's for the whole process, so nothing in
//   the shim may call the public dlsym: we call glibc's through real_dlsym().
// - A hook may run before our constructor (another library's constructor can
//   allocate), so every resolution here is lazy, lock-free and idempotent:
//   two threads resolving the same symbol store the same address.
// - RTLD_NEXT only searches the global scope. Python and the static CUDA
//   runtime dlopen libcudart/libcuda RTLD_LOCAL, so we fall back to the
//   library's own handle (dlopen RTLD_NOLOAD never loads anything new).
// - No lock of ours is held while we call into the loader, so a thread that
//   holds the loader lock and enters a hook cannot deadlock against us.
// - Our own exports (the wrappers) are never adopted as the real function:
//   any address inside libgpumemrec.so is refused (self_module.h), so this
//   layer needs no table of the wrappers above it.
// - Answers (found or not) are cached per hook and invalidated when a library
//   is unloaded or, for a failed look-up, when one is loaded (symbol_cache.h).
#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "shim/base/hook_table.h"
#include "shim/base/self_module.h"
#include "shim/base/symbol_cache.h"

namespace gpumemrec {

namespace {

const HookInfo kHooks[] = {
#define GPUMEMREC_INFO(sym, lib) {#sym, Library::lib},
    GPUMEMREC_HOOKS(GPUMEMREC_INFO)
#undef GPUMEMREC_INFO
};
static_assert(sizeof(kHooks) / sizeof(kHooks[0]) == kHookCount, "hook table out of sync");

SymbolSlot g_real[kHookCount];
std::atomic<DlsymFn> g_real_dlsym{nullptr};
std::atomic<DlcloseFn> g_real_dlclose{nullptr};

const char* const kCudartNames[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                    nullptr};
const char* const kCudaNames[] = {"libcuda.so.1", "libcuda.so", nullptr};
const char* const kHipNames[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5",
                                 nullptr};

const char* const* library_names(Library lib) {
  switch (lib) {
    case Library::CUDART: return kCudartNames;
    case Library::CUDA: return kCudaNames;
    case Library::HIP: return kHipNames;
  }
  return kCudaNames;
}

const char* library_prefix(Library lib) {
  switch (lib) {
    case Library::CUDART: return "libcudart.so";
    case Library::CUDA: return "libcuda.so";
    case Library::HIP: return "libamdhip64.so";
  }
  return "libcuda.so";
}

// Collected under dl_iterate_phdr's lock; dlopen is called only after it.
struct ScanState {
  const char* prefix;
  char path[4096];
  bool found;
};

int scan_callback(struct dl_phdr_info* info, size_t, void* data) {
  auto* st = static_cast<ScanState*>(data);
  const char* name = info->dlpi_name;
  if (!name || !*name) return 0;
  const char* base = std::strrchr(name, '/');
  base = base ? base + 1 : name;
  if (std::strncmp(base, st->prefix, std::strlen(st->prefix)) != 0) return 0;
  size_t n = std::strlen(name);
  if (n >= sizeof(st->path)) return 0;
  std::memcpy(st->path, name, n + 1);
  st->found = true;
  return 1;
}

void* symbol_from_handle_named(const char* libname, const char* sym) {
  void* h = dlopen(libname, RTLD_NOLOAD | RTLD_LAZY);
  if (!h) return nullptr;
  void* p = real_dlsym()(h, sym);
  if (DlcloseFn close = real_dlclose()) close(h);  // not our exported dlclose
  return p;
}

void* lookup_real(const void* ctx) {
  const HookInfo& info = *static_cast<const HookInfo*>(ctx);
  void* p = lookup_library_symbol(info.library, info.name);
  return p && !address_in_self(reinterpret_cast<uint64_t>(p)) ? p : nullptr;
}

}  // namespace

const HookInfo& hook_info(HookId id) { return kHooks[int(id)]; }

Backend hook_backend(HookId id) {
  return kHooks[int(id)].library == Library::HIP ? Backend::kHip : Backend::kCuda;
}

bool find_hook(const char* name, HookId* out) {
  if (!name || (name[0] != 'c' && name[0] != 'h')) return false;
  for (int i = 0; i < kHookCount; ++i) {
    if (std::strcmp(kHooks[i].name, name) == 0) {
      *out = HookId(i);
      return true;
    }
  }
  return false;
}

// Not instrumented: a sanitizer runtime calls dlsym(RTLD_NEXT, ...) while it
// initialises, before its shadow memory exists, and in a program that links
// the shim's objects (the unit tests) that call lands in our dlsym.
__attribute__((no_sanitize("address", "thread", "undefined"))) DlsymFn real_dlsym() {
  DlsymFn f = DlsymFn(__atomic_load_n(reinterpret_cast<void**>(&g_real_dlsym), __ATOMIC_ACQUIRE));
  if (f) return f;
  // dlvsym is not hooked, so this reaches glibc. RTLD_NEXT from here skips us.
  void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  f = reinterpret_cast<DlsymFn>(p);
  __atomic_store_n(reinterpret_cast<void**>(&g_real_dlsym), p, __ATOMIC_RELEASE);
  return f;
}

void* lookup_library_symbol(Library lib, const char* sym) {
  DlsymFn dls = real_dlsym();
  if (!dls) return nullptr;
  // 1. The global scope after us (a library linked by the program).
  if (void* p = dls(RTLD_NEXT, sym)) return p;
  // 2. The library by its usual names, if it is loaded at all.
  for (const char* const* n = library_names(lib); *n; ++n)
    if (void* p = symbol_from_handle_named(*n, sym)) return p;
  // 3. Any loaded object whose file name starts like the library's.
  ScanState st{library_prefix(lib), {}, false};
  dl_iterate_phdr(scan_callback, &st);
  if (st.found) return symbol_from_handle_named(st.path, sym);
  return nullptr;
}

DlcloseFn real_dlclose() {
  DlcloseFn f = g_real_dlclose.load(std::memory_order_acquire);
  if (f) return f;
  DlsymFn dls = real_dlsym();
  f = dls ? reinterpret_cast<DlcloseFn>(dls(RTLD_NEXT, "dlclose")) : nullptr;
  g_real_dlclose.store(f, std::memory_order_release);
  return f;
}

void* real_function(HookId id) { return cached_symbol(g_real[int(id)], lookup_real, &kHooks[int(id)]); }

void* adopt_real_function(HookId id, void* addr) {
  if (addr && address_in_self(reinterpret_cast<uint64_t>(addr))) addr = nullptr;
  return adopt_symbol(g_real[int(id)], addr);
}

namespace {
struct HelperQuery {
  Library lib;
  const char* name;
};
void* lookup_helper(const void* ctx) {
  const auto* q = static_cast<const HelperQuery*>(ctx);
  return lookup_library_symbol(q->lib, q->name);
}
}  // namespace

void* helper_function(SymbolSlot& slot, Library lib, const char* name) {
  const HelperQuery q{lib, name};
  return cached_symbol(slot, lookup_helper, &q);
}

}  // namespace gpumemrec
