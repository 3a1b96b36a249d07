// The address range of libgpumemrec.so itself (all its loadable segments).
//
// base/ uses it to refuse our own exports as "the real function" (resolve.cpp)
// without knowing the wrapper table above it; record/ uses it to drop our own
// frames from native stacks.
#pragma once
#include <cstdint>
#include <string>

namespace gpumemrec {

// Finds the range once (dl_iterate_phdr, so not from a context that holds
// the loader lock: the constructor or a resolution does it first).
void self_module_init();

// True if `addr` lies inside our own module. Before self_module_init() ran,
// initialises it (lazily, idempotent).
bool address_in_self(uint64_t addr);

// The directory libgpumemrec.so was loaded from ("" if unknown): what ships
// beside it (the Python start-up hook, libunwind) is looked up there, in the
// build tree (bin/), an install (lib/gpumemrec/) and the wheel (_native/).
std::string self_module_dir();

}  // namespace gpumemrec
