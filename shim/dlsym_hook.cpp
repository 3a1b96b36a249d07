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

}  // extern "C"
