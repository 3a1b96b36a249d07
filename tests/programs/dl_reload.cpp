// dl_reload: dlopen a library, allocate through it (out of memory: a bundle),
// dlclose it, dlopen another one built from the same source (usually mapped
// at the same address), allocate again (a second bundle).
//
//   dl_reload [size=1TiB]
// Output: CALL fn=<name> addr=<function address> rc=<result>, then DONE.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <string>

#include "prog_common.h"

int main(int argc, char** argv) {
  const uint64_t size = prog_parse_size(argc > 1 ? argv[1] : nullptr, 1ull << 40);
  void* warm = nullptr;  // keeps the runtime loaded across the dlclose
  if (cudaMalloc(&warm, 256) == cudaSuccess) cudaFree(warm);
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = n > 0 ? std::string(exe, size_t(n)) : std::string("./x");
  dir.resize(dir.rfind('/') + 1);
  const char* const libs[][2] = {{"libreload_alpha.so", "alpha_alloc"}, {"libreload_omega.so", "omega_alloc"}};
  for (const auto& lib : libs) {
    void* h = dlopen((dir + lib[0]).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::printf("ERROR dlopen %s: %s\n", lib[0], dlerror());
      return 1;
    }
    auto fn = reinterpret_cast<int (*)(unsigned long long)>(dlsym(h, lib[1]));
    const int rc = fn ? fn(size) : -1;
    std::printf("CALL fn=%s addr=%p rc=%d\n", lib[1], reinterpret_cast<void*>(fn), rc);
    std::fflush(stdout);
    dlclose(h);
  }
  std::printf("DONE\n");
  return 0;
}
