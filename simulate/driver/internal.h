// Internals shared by the simulated driver's files (libcuda.so.1).
//
// Compiled against the real CUDA 13 cuda.h with __CUDA_API_VERSION_INTERNAL
// defined, which is how the driver itself sees the header: the API macros
// (cuMemAlloc -> cuMemAlloc_v2, ...) are undone at the end of the header and
// the legacy ABIs (cuMemAlloc with a 32-bit CUdeviceptr_v1, cuGetProcAddress
// without a status argument) and the plain/_ptsz stream variants are all
// declared, so every symbol is defined with its exact real signature.
//
// The library is linked with -Bsymbolic: addresses taken inside it (the
// cuGetProcAddress table) are its own functions, identical to what
// dlsym(handle, "<name>") returns, even when a preloaded library interposes
// the same names. Internal calls never go through exported symbols.
#pragma once

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstdint>

#include "core/config.h"
#include "core/ledger.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace drv {

using sim::Kind;

// The calling thread's current context (context.cpp).
extern thread_local int t_device;      // its device
extern thread_local bool t_has_ctx;    // a context was made current on this thread
extern thread_local int t_created;     // a created context's index, -1 for a primary one or none

inline int ndev() { return sim::config().devices; }
inline bool valid_dev(int d) { return d >= 0 && d < ndev(); }

// Contexts (context.cpp).
void mark_active(int device);              // the device's primary context exists (again)
void note_owner(uint64_t addr);            // memory allocated while a created context is current is its own
void forget_owner(uint64_t addr);
int owner_of(uint64_t addr);               // the created context owning addr, or -1
CUcontext context_handle(int owner, int device);  // a created context's handle, or the device's primary one

// Memory (memory.cpp): every device allocation entry point ends up in do_alloc.
CUresult map_core(int rc, CUresult bad_device = CUDA_ERROR_INVALID_CONTEXT);
// pooled: a stream-ordered allocation, taken from what the device's pool keeps first.
CUresult do_alloc(CUdeviceptr* dptr, size_t size, int device, Kind kind, bool pooled = false);
CUresult do_free(CUdeviceptr p);

// The device-memory pools of the stream-ordered allocator (pool.cpp).
void pools_released_at_sync();

}  // namespace drv
