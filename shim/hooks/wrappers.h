// The wrapper table: the address of our exported wrapper of each hook.
//
// Each family file (cuda_runtime.cpp, cuda_driver.cpp, hip.cpp) defines its
// part, from its own X-macro list in base/hook_list.h, where the wrappers'
// real prototypes are visible (no `void()` re-declarations, which link-time
// optimisation reports as a type mismatch). wrappers.cpp joins the parts and
// checks that they add up to THE list, in its order.
#pragma once
#include "shim/base/hook_table.h"

namespace gpumemrec {

// Our exported function for `id`.
void* wrapper_of(HookId id);

// The family parts, in HookId order. Sizes are checked in wrappers.cpp.
#define GPUMEMREC_COUNT_ONE(sym, lib) +1
constexpr int kCudartHookCount = 0 GPUMEMREC_HOOKS_CUDART(GPUMEMREC_COUNT_ONE);
constexpr int kCudaHookCount = 0 GPUMEMREC_HOOKS_CUDA(GPUMEMREC_COUNT_ONE);
constexpr int kHipHookCount = 0 GPUMEMREC_HOOKS_HIP(GPUMEMREC_COUNT_ONE);
#undef GPUMEMREC_COUNT_ONE
extern void* const kCudartWrappers[kCudartHookCount];
extern void* const kCudaWrappers[kCudaHookCount];
extern void* const kHipWrappers[kHipHookCount];

// One entry of a family part: the wrapper's address, taken with its real type.
#define GPUMEMREC_WRAPPER_ADDRESS(sym, lib) reinterpret_cast<void*>(&::sym),

}  // namespace gpumemrec
