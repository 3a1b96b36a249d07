#include "core/driver_entry.h"

#include <dlfcn.h>

#include <mutex>

namespace sim {
namespace {

GetProcAddressFn open_driver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) return nullptr;
  auto first = reinterpret_cast<GetProcAddressFn>(dlsym(lib, "cuGetProcAddress_v2"));
  if (first == nullptr) return nullptr;
  void* p = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (first("cuGetProcAddress", &p, 12000, 0, &st) != CUDA_SUCCESS || p == nullptr) return nullptr;
  auto gpa = reinterpret_cast<GetProcAddressFn>(p);
  void* init = nullptr;
  if (gpa("cuInit", &init, 2000, 0, &st) != CUDA_SUCCESS || init == nullptr) return nullptr;
  if (reinterpret_cast<CUresult (*)(unsigned int)>(init)(0) != CUDA_SUCCESS) return nullptr;
  return gpa;
}

}  // namespace

GetProcAddressFn driver_proc_address() {
  static GetProcAddressFn gpa = nullptr;
  static std::once_flag once;
  std::call_once(once, [] { gpa = open_driver(); });
  return gpa;
}

}  // namespace sim
