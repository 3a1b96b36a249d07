#include "common/zstd_dl.h"

#include <dlfcn.h>

namespace gpumemrec::zstd {

namespace {

template <typename F>
bool find(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

Api* load() {
  void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return nullptr;
  static Api a;
  bool ok = find(lib, "ZSTD_createCCtx", &a.createCCtx) && find(lib, "ZSTD_freeCCtx", &a.freeCCtx) &&
            find(lib, "ZSTD_CCtx_setParameter", &a.CCtx_setParameter) &&
            find(lib, "ZSTD_compressStream2", &a.compressStream2) && find(lib, "ZSTD_createDCtx", &a.createDCtx) &&
            find(lib, "ZSTD_freeDCtx", &a.freeDCtx) && find(lib, "ZSTD_decompressStream", &a.decompressStream) &&
            find(lib, "ZSTD_isError", &a.isError) && find(lib, "ZSTD_getErrorName", &a.getErrorName);
  if (!ok) {
    dlclose(lib);
    return nullptr;
  }
  return &a;
}

}  // namespace

const Api* api() {
  static const Api* loaded = load();  // thread-safe initialization
  return loaded;
}

}  // namespace gpumemrec::zstd
