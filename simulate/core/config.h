// What this process simulates: read once from the environment.
//
//   GPUMEMREC_SIMULATE=NAME[:COUNT]  a card of core/profile.h, COUNT of them
//   (unset)                          the test suite's "Fake GPU": 1 GiB, 1 device
//
// Test knobs (simulate/README.md), applied on top of either:
// FAKEGPU_CAPACITY, FAKEGPU_DEVICES, FAKEGPU_CONTEXT_BYTES,
// FAKEGPU_OTHERS_BYTES, FAKEGPU_RESERVE_VA.
#pragma once

#include <cstdint>

#include "core/profile.h"

namespace sim {

constexpr int kMaxDevices = 64;

struct Config {
  const Profile* profile = nullptr;  // nullptr: the tests' plain Fake GPU
  uint64_t capacity = 0;             // bytes per device (cuMemGetInfo's total)
  int devices = 1;                   // 0..kMaxDevices
  bool reserve_va = true;            // reserve device ranges against host mappings
  uint64_t context_bytes = 0;        // this process's CUDA context on each device
  uint64_t reserved_bytes = 0;       // never free on each device (the driver's own)
  uint64_t others_bytes = 0;         // other processes' bytes on device 0
  bool bad_spec = false;             // GPUMEMREC_SIMULATE named no profile: no device
};

const Config& config();

// The device name a program reads ("NVIDIA H100 80GB HBM3", or "Fake GPU <n>").
void device_name(int device, char* out, int len);

}  // namespace sim
