// The C half of our dlsym (dlsym_hook.S is the entry point).
#include <dlfcn.h>

#include "shim/hooks.h"
#include "shim/proc_address.h"

extern "C" {

// Read by dlsym_hook.S; set once.
__attribute__((visibility("hidden"))) void* gpumemrec_real_dlsym_ptr = nullptr;

__attribute__((visibility("hidden"))) void* gpumemrec_resolve_real_dlsym() {
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
__attribute__((visibility("hidden"))) int gpumemrec_dlsym_default_fixup(const char* name, void** out) {
  gpumemrec::HookId id;
  if (!name || !gpumemrec::find_hook(name, &id)) return 0;
  gpumemrec::DlsymFn real = gpumemrec::real_dlsym();
  if (!real) return 0;
  void* global = real(RTLD_DEFAULT, name);  // from here: the global scope, where a preload sits
  void* wrapper = gpumemrec::hook_info(id).wrapper;
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
