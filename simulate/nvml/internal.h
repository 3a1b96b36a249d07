// Internals shared by the simulated NVML's files (libnvidia-ml.so.1).
#pragma once

#include "nvml/types.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

// nvmlInit has been called more often than nvmlShutdown.
bool nvml_initialized();
// A device's handle, and the index of a handle (-1: not a device of this NVML).
nvmlDevice_t nvml_device(int index);
int nvml_device_index(nvmlDevice_t d);
