// The C half of our dlsym (dlsym_hook.S is the entry point).
#include <dlfcn.h>

#include "shim/base/hook_table.h"
#include "shim/hooks/proc_address.h"
#include "shim/hooks/wrappers.h"

extern "C" {

// Read by dlsym_hook.S; set once.
__attribute__((visibility("hidden"))) void* gpumemrec_real_dlsym_ptr = nullptr;

__attribute__((visibility("hidden"), no_sanitize("address", "thread", "undefined"))) void* gpumemrec_resolve_real_dlsym() {
  void* p = reinterpret_cast<void*>(gpumemrec::real_dlsym());
  __atomic_store_n(&gpumemrec_real_dlsym_ptr, p, __ATOMIC_RELEASE);
  return p;
}

// dlsym(handle, name) with an explicit handle: the caller's address does not
// matter to glibc here, so calling it from C is exact.
__attribute__((visibility("hidden"))) void* gpumemrec_dlsym_explicit(void* handle, const char* name) {
  gpumemrec::DlsymFn real = gpumemrec::real_dlsym();
  if (!real) return nullptr;
  void* addr = real(handle, name);
  return gpumemrec::swap_dlsym_result(name, addr);
}

// dlsym(RTLD_DEFAULT, name), called from dlsym_hook.S. Returns 0 when glibc
// should answer (tail jump, exact caller semantics); 1 with *out set when the
// answer would be one of our wrappers: then it is the wrapper if the real
// function exists somewhere, and NULL (with glibc's own dlerror() message) if
// only our export defines the name.
// Not instrumented, and returns at once for names that cannot be ours: a
// sanitizer runtime looks up libc functions this way before its shadow memory
// exists (in programs that link the shim's objects: the unit tests).
__attribute__((visibility("hidden"), no_sanitize("address", "thread", "undefined"))) int
gpumemrec_dlsym_default_fixup(const char* name, void** out) {
  if (!name || !((name[0] == 'c' && name[1] == 'u') || (name[0] == 'h' && name[1] == 'i' && name[2] == 'p')))
    return 0;
  gpumemrec::HookId id;
  if (!gpumemrec::find_hook(name, &id)) return 0;
  gpumemrec::DlsymFn real = gpumemrec::real_dlsym();
  if (!real) return 0;
  void* global = real(RTLD_DEFAULT, name);  // from here: the global scope, where a preload sits
  void* wrapper = gpumemrec::wrapper_of(id);
  if (global != wrapper) return 0;
  if (gpumemrec::real_function(id)) {
    *out = wrapper;
    return 1;
  }
  (void)real(RTLD_NEXT, name);  // not found after us either: sets dlerror()
  *out = nullptr;
  return 1;
}

}  // extern "C"
