#include "shim/hooks/wrappers.h"

namespace gpumemrec {

static_assert(kCudartHookCount + kCudaHookCount + kHipHookCount == kHookCount,
              "the family lists must add up to the hook table");
// Each family's hooks are contiguous in HookId, in the order CUDART, CUDA, HIP.
#define GPUMEMREC_CHECK_CUDART(sym, lib) \
  static_assert(int(HookId::sym) < kCudartHookCount && Library::lib == Library::CUDART, #sym);
#define GPUMEMREC_CHECK_CUDA(sym, lib)                                                                        \
  static_assert(int(HookId::sym) >= kCudartHookCount && int(HookId::sym) < kCudartHookCount + kCudaHookCount && \
                    Library::lib == Library::CUDA,                                                            \
                #sym);
#define GPUMEMREC_CHECK_HIP(sym, lib) \
  static_assert(int(HookId::sym) >= kCudartHookCount + kCudaHookCount && Library::lib == Library::HIP, #sym);
GPUMEMREC_HOOKS_CUDART(GPUMEMREC_CHECK_CUDART)
GPUMEMREC_HOOKS_CUDA(GPUMEMREC_CHECK_CUDA)
GPUMEMREC_HOOKS_HIP(GPUMEMREC_CHECK_HIP)
#undef GPUMEMREC_CHECK_CUDART
#undef GPUMEMREC_CHECK_CUDA
#undef GPUMEMREC_CHECK_HIP

void* wrapper_of(HookId id) {
  int i = int(id);
  if (i < kCudartHookCount) return kCudartWrappers[i];
  i -= kCudartHookCount;
  if (i < kCudaHookCount) return kCudaWrappers[i];
  i -= kCudaHookCount;
  return i < kHipHookCount ? kHipWrappers[i] : nullptr;
}

}  // namespace gpumemrec
