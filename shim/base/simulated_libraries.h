// GPUMEMREC_SIMULATE=NAME[:COUNT] with LD_PRELOAD=libgpumemrec.so: the
// simulated CUDA libraries (simulate/, installed as simulate/ beside this
// library) are loaded from the constructor, RTLD_GLOBAL, before the program
// loads NVIDIA's: a library already loaded under a SONAME satisfies every
// later DT_NEEDED entry and dlopen of that name (glibc elf/dl-load.c), so the
// program's libcudart.so.13, libcuda.so.1, ... are ours. `gpumemrec run
// --simulate` preloads them itself as well (for programs linked to the CUDA
// runtime at start-up, which are mapped before any constructor runs).
//
// Where NVIDIA's library of a name is already loaded, or the simulated ones
// are missing, one line says so and nothing is changed.
#pragma once

namespace gpumemrec {

// From the constructor, before any other thread of ours exists.
void simulated_libraries_load();

}  // namespace gpumemrec
