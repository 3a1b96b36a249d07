// What the driver says at dump time: free/total memory of the failing device,
// versions and device names. Asked through unhooked driver entry points
// (cuMemGetInfo_v2, hipMemGetInfo ...) found in the already-loaded library;
// nothing is loaded, and the runtime's sticky error state is never touched
// (for CUDA we ask the driver, which has none).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/event.h"

namespace gpumemrec {

struct DeviceInfo {
  int device_id = 0;
  std::string name;
  uint64_t total_bytes = 0;
};

struct DeviceReport {
  bool has_mem_info = false;
  uint64_t free_bytes = 0, total_bytes = 0;
  int driver_version = 0;   // 0 = unknown
  int runtime_version = 0;  // 0 = unknown
  std::vector<DeviceInfo> devices;
  // gpumemrec's simulated card, when the driver is the simulated one with a
  // profile chosen (simulate/: gpumemrec_simulated_profile): its id, "" otherwise.
  std::string simulated_profile;
  int simulated_devices = 0;
};

// Must run on the thread that failed (its current context is the device's).
DeviceReport query_devices(Backend backend, int device);

// Name of a result code of the given API family (e.g. cudaErrorMemoryAllocation).
const char* error_name(Backend backend, bool runtime_api, int code);

}  // namespace gpumemrec
