// Functions the simulation does not model.
//
// Every simulated library exports every function NVIDIA's library of the same
// name exports (simulate/exports/<soname>.txt), so that a program linked
// against the real one loads and binds. Those the simulation models are
// defined in the library's sources; the rest are weak stubs made from the
// list (the linker keeps a library's own definition over its stub). A stub
// returns the library's documented "not supported" code and, the first time
// it is called, prints one line naming itself. It reads no argument: every
// function of these APIs returns an int-sized status, and the caller cleans
// up its own arguments (System V x86-64), so the stub has the right ABI for
// any of them.
#pragma once

#include <atomic>

namespace sim {

// Says once (per function) on stderr that `name` is not simulated and returns `code`.
int unmodeled(std::atomic<bool>* said, const char* library, const char* name, int code, const char* code_name);

}  // namespace sim

// SIM_UNMODELED_LIBRARY(lib, code, code_name) then #include the generated list
// of SIM_UNMODELED(name) lines: see simulate/CMakeLists.txt.
#define SIM_UNMODELED(fn)                                                             \
  extern "C" __attribute__((weak, visibility("default"))) int fn() {                  \
    static std::atomic<bool> said{false};                                             \
    return sim::unmodeled(&said, kSimLibrary, #fn, kSimUnmodeledCode, kSimCodeName); \
  }
