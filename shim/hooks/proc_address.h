// Swapping entry points handed out by dlsym(handle, ...), cuGetProcAddress
// and hipGetProcAddress for our wrappers, for exactly the ABIs we wrap.
#pragma once
#include <cstdint>

namespace gpumemrec {

// dlsym on an explicit handle returned `addr` for `name`: our wrapper if
// `name` is hooked and `addr` is (or becomes) the real function we call.
void* swap_dlsym_result(const char* name, void* addr);

// cuGetProcAddress(_v2) returned `addr` for (symbol, version, flags).
// We return our wrapper X only when `addr` is the real X the driver exports
// (so the ABI is the one the caller asked for, whatever version and
// per-thread flag it used); otherwise `addr` untouched. If the driver hands
// out a non-exported address, a table of known (name, version, flags) ABIs
// decides (see proc_address.cpp).
void* swap_driver_proc(const char* symbol, void* addr, int version, uint64_t flags);

// hipGetProcAddress returned `addr` for `symbol`.
void* swap_hip_proc(const char* symbol, void* addr);

}  // namespace gpumemrec
