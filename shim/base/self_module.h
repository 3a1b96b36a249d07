// The address range of libgpumemrec.so itself (all its loadable segments).
//
// base/ uses it to refuse our own exports as "the real function" (resolve.cpp)
// without knowing the wrapper table above it; record/ uses it to drop our own
// frames from native stacks.
#pragma once
#include <cstdint>

namespace gpumemrec {

// Finds the range once (dl_iterate_phdr, so not from a context that holds
// the loader lock: the constructor or a resolution does it first).
void self_module_init();

// True if `addr` lies inside our own module. Before self_module_init() ran,
// initialises it (lazily, idempotent).
bool address_in_self(uint64_t addr);

}  // namespace gpumemrec
