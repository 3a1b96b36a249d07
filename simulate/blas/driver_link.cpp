#include "blas/driver_link.h"

#include <mutex>

#include "core/driver_entry.h"

namespace sim::blas {

const DriverCalls* driver() {
  static DriverCalls calls;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] {
    ok = driver_entry("cuCtxGetDevice", 2000, &calls.ctx_get_device) &&
         driver_entry("cuMemAllocAsync", 11020, &calls.mem_alloc_async) &&
         driver_entry("cuMemFreeAsync", 11020, &calls.mem_free_async);
  });
  return ok ? &calls : nullptr;
}

}  // namespace sim::blas
