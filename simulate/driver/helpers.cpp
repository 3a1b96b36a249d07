// Helpers for the tests and the recorder (not part of any real driver), and
// the library's load and unload: address-space reservation, the ledger written at exit.
#include "core/shared_ledger.h"
#include "driver/internal.h"

using namespace drv;

FAKE_EXPORT int fakegpu_write_ledger(const char* path) { return sim::write_ledger(path); }
FAKE_EXPORT int fakegpu_cuda_write_ledger(const char* path) { return sim::write_ledger(path); }
FAKE_EXPORT unsigned long long fakegpu_cuda_live_bytes(int device) {
  return valid_dev(device) ? sim::used_bytes(device) : 0;
}
// NVML's figure for this process (fake_nvml.cpp): allocations plus context.
FAKE_EXPORT unsigned long long fakegpu_cuda_process_bytes(int device) {
  return valid_dev(device) ? sim::process_bytes(device) : 0;
}
FAKE_EXPORT unsigned long long fakegpu_cuda_capacity(void) { return sim::config().capacity; }
FAKE_EXPORT int fakegpu_cuda_device_count(void) { return ndev(); }

// The simulated card of this process ("h100-80gb"), or nullptr for the test
// suite's plain Fake GPU: what the recorder writes into a bundle's metadata.
FAKE_EXPORT const char* gpumemrec_simulated_profile(void) {
  const sim::Profile* p = sim::config().profile;
  return p != nullptr ? p->id : nullptr;
}
FAKE_EXPORT int gpumemrec_simulated_devices(void) { return ndev(); }

__attribute__((constructor)) static void fake_cuda_loaded() {
  sim::note_loader_pid();
  sim::prereserve();
  sim::shared::at_load();  // the run's shared devices (core/shared_ledger.h)
}
__attribute__((destructor)) static void fake_cuda_unloaded() {
  sim::write_ledger_at_exit();
  sim::shared::at_exit();
}
