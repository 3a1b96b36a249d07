// `selftest_cudnn_nodriver <path/to/libcudnn.so.9>`: loads a copy of the
// simulated cuDNN from a directory without libcuda.so.1 (this executable has
// no RPATH; run_without_driver.py) and checks that a handle cannot be made,
// as NVIDIA's cudnnCreate says when "the CUDA Runtime API initialization
// failed" (CUDNN_STATUS_NOT_INITIALIZED), while the version queries answer.
#include <dlfcn.h>

#include <cstring>

#include "dnn/types.h"
#include "selftest_check.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: selftest_cudnn_nodriver <libcudnn.so.9>\n");
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  auto create = reinterpret_cast<cudnnStatus_t (*)(cudnnHandle_t*)>(dlsym(h, "cudnnCreate"));
  auto version = reinterpret_cast<size_t (*)()>(dlsym(h, "cudnnGetVersion"));
  auto text = reinterpret_cast<const char* (*)(cudnnStatus_t)>(dlsym(h, "cudnnGetErrorString"));
  CHECK(create && version && text);
  if (!(create && version && text)) return selftest_finish("selftest_cudnn_nodriver");
  CHECK_EQ(version(), 92400);
  cudnnHandle_t handle = reinterpret_cast<cudnnHandle_t>(0x1);
  CHECK_EQ(create(&handle), CUDNN_STATUS_NOT_INITIALIZED);
  CHECK(handle == reinterpret_cast<cudnnHandle_t>(0x1));  // untouched
  CHECK(strcmp(text(CUDNN_STATUS_NOT_INITIALIZED), "CUDNN_STATUS_NOT_INITIALIZED") == 0);
  return selftest_finish("selftest_cudnn_nodriver");
}
