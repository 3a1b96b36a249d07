#include "shim/base/simulated_libraries.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "shim/base/log.h"
#include "shim/base/self_module.h"

namespace gpumemrec {
namespace {

// In the order their dependencies need: the driver first (the runtime
// dlopens it by name), cuBLASLt before cuBLAS (its DT_NEEDED).
const char* const kLibraries[] = {"libcuda.so.1",     "libnvidia-ml.so.1", "libcudart.so.13", "libcublasLt.so.13",
                                  "libcublas.so.13",  "libcudnn.so.9",     "libnccl.so.2"};

bool is_ours(void* handle) { return dlsym(handle, "gpumemrec_simulated_library") != nullptr; }

// Loads one library unless a library of that SONAME is there already.
// Returns false (after its line) when NVIDIA's own is.
bool load_one(const std::string& dir, const char* name) {
  if (void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) {
    const bool ours = is_ours(h);
    dlclose(h);
    if (ours) return true;
    GM_WARN("GPUMEMREC_SIMULATE: NVIDIA's {} is already loaded in this program (linked at start-up), so it "
            "cannot run on a simulated card; run it with `gpumemrec run --simulate ...`, which preloads the "
            "simulated libraries ahead of it",
            name);
    return false;
  }
  const std::string path = dir + "/" + name;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return true;  // a library this build does not simulate
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const char* err = dlerror();
    GM_WARN("GPUMEMREC_SIMULATE: cannot load {}: {}", path, err ? err : "unknown error");
    return false;
  }
  return true;
}

}  // namespace

void simulated_libraries_load() {
  const char* spec = getenv("GPUMEMREC_SIMULATE");
  if (spec == nullptr || *spec == '\0') return;
  const std::string base = self_module_dir();
  const std::string dir = base + "/simulate";
  struct stat st;
  if (base.empty() || stat((dir + "/libcuda.so.1").c_str(), &st) != 0) {
    GM_WARN("GPUMEMREC_SIMULATE={}: the simulated CUDA libraries are not installed beside this library ({}); "
            "the program runs on whatever CUDA it finds",
            spec, dir);
    return;
  }
  for (const char* name : kLibraries)
    if (!load_one(dir, name)) return;
}

}  // namespace gpumemrec
