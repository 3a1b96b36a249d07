// Our exported dlclose: glibc's, then, if the loader really unloaded an
// object, a new unload generation so that every cached real-function and
// helper address is checked again before its next use (base/symbol_cache.h).
// A program that dlcloses libcuda and dlopens it again (at another address)
// must never have its calls sent into the old mapping.
//
// dlclose does not look at its caller (unlike dlsym and dlopen), so a C
// wrapper is exact; dlerror() is left as glibc set it (nothing here touches
// it: dl_iterate_phdr does not).
#include <dlfcn.h>

#include "shim/base/hook_table.h"
#include "shim/base/symbol_cache.h"
#include "shim/dump/dumper.h"

extern "C" __attribute__((visibility("default"))) int dlclose(void* handle) {
  gpumemrec::DlcloseFn real = gpumemrec::real_dlclose();
  if (!real) return -1;
  // A bundle frozen just before still has to name this library's frames.
  gpumemrec::dumper_before_unload();
  const uint64_t before = gpumemrec::loader_subs();
  const int rc = real(handle);
  if (gpumemrec::loader_subs() != before) gpumemrec::note_library_unloaded();
  return rc;
}
