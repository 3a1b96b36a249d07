// What each simulated device presents to a program: the attributes of
// cuDeviceGetAttribute / cudaDeviceGetAttribute (one numbering), the runtime's
// cudaDeviceProp, its PCI location and UUID, all from the profile of
// core/config.h (or, with none chosen, the tests' plain "Fake GPU").
#pragma once

#include <cuda_runtime_api.h>

#include "core/profile.h"

namespace sim {

// The card every device of this process is: the chosen profile, or the Fake
// GPU (an H100-like card with the tests' capacity).
const Profile& card();

// One device attribute (CUdevice_attribute / cudaDeviceAttr numbering).
// False for a number outside the enumeration.
bool device_attribute(int attribute, int device, int* value);

void fill_device_prop(int device, cudaDeviceProp* prop);

// PCI location: domain 0, bus 0x18 + 0x10 * device, device 0 (as a DGX-like
// board spreads its cards over buses); "0000:18:00.0".
int pci_bus(int device);
void pci_bus_id(int device, char* out, int len);
// 16 bytes, the same every run for a profile and device index.
void device_uuid(int device, unsigned char out[16]);

}  // namespace sim
