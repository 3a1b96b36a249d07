// Zstandard, loaded at run time: dlopen("libzstd.so.1") the first time it is
// asked for, never a link-time dependency (the shim must load into programs
// on machines without libzstd; the tools read .zst bundle files when it is
// there and say so when it is not).
//
// Only zstd's stable API is used, declared here from facebook/zstd
// lib/zstd.h (v1.5.7, "stable API" section: ZSTD_createCCtx,
// ZSTD_CCtx_setParameter with ZSTD_c_compressionLevel = 100,
// ZSTD_compressStream2 with ZSTD_e_continue = 0 / ZSTD_e_end = 2,
// ZSTD_createDCtx, ZSTD_decompressStream, ZSTD_isError, ZSTD_getErrorName,
// and the ZSTD_inBuffer / ZSTD_outBuffer structs), unchanged since 1.4.0;
// Debian 12 ships 1.5.4 (libzstd1).
#pragma once

#include <cstddef>

namespace gpumemrec::zstd {

struct InBuffer {
  const void* src;
  size_t size;
  size_t pos;
};
struct OutBuffer {
  void* dst;
  size_t size;
  size_t pos;
};

struct Api {
  void* (*createCCtx)();
  size_t (*freeCCtx)(void*);
  size_t (*CCtx_setParameter)(void*, int, int);
  size_t (*compressStream2)(void*, OutBuffer*, InBuffer*, int);
  void* (*createDCtx)();
  size_t (*freeDCtx)(void*);
  size_t (*decompressStream)(void*, OutBuffer*, InBuffer*);
  unsigned (*isError)(size_t);
  const char* (*getErrorName)(size_t);
};

constexpr int kLevelParameter = 100;  // ZSTD_c_compressionLevel
constexpr int kContinue = 0;          // ZSTD_e_continue
constexpr int kEnd = 2;               // ZSTD_e_end
constexpr const char* kLibrary = "libzstd.so.1";
constexpr const char* kSuffix = ".zst";

// The library's functions, or null when libzstd.so.1 cannot be loaded (or
// lacks one of them). Loaded once; thread-safe; never unloaded.
const Api* api();

}  // namespace gpumemrec::zstd
