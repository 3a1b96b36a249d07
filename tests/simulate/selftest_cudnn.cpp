// simulate.cudnn: the simulated libcudnn.so.9 on its own. Handles (their
// device memory in the driver's ledger), version and error queries here; the
// backend descriptors, the workspace model, executions, the legacy API and
// threads in the other selftest_cudnn_*.cpp.
#include <dlfcn.h>

#include <cstring>

#include "selftest_cudnn.h"

namespace {

using LiveBytes = unsigned long long (*)(int);

// The simulated driver's count of live device bytes (simulate/README.md).
unsigned long long live_bytes() {
  static auto fn = reinterpret_cast<LiveBytes>(dlsym(dlopen("libcuda.so.1", RTLD_NOW), "fakegpu_cuda_live_bytes"));
  return fn != nullptr ? fn(0) : ~0ull;
}

void test_handles() {
  const unsigned long long before = live_bytes();
  cudnnHandle_t a = nullptr, b = nullptr;
  CHECK_EQ(cudnnCreate(&a), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(live_bytes() - before, 25344 + 4);  // two cuMemAlloc_v2 calls
  CHECK_EQ(cudnnCreate(&b), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(live_bytes() - before, 2 * (25344 + 4));
  cudaStream_t s = reinterpret_cast<cudaStream_t>(0x1234), got = nullptr;
  CHECK_EQ(cudnnGetStream(a, &got), CUDNN_STATUS_SUCCESS);
  CHECK(got == nullptr);  // the legacy default stream until set
  CHECK_EQ(cudnnSetStream(a, s), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(cudnnGetStream(a, &got), CUDNN_STATUS_SUCCESS);
  CHECK(got == s);
  CHECK_EQ(cudnnDestroy(a), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(cudnnDestroy(b), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(live_bytes(), before);
  // Hostile: NULL, a destroyed handle, a pointer that never was one.
  CHECK_EQ(cudnnCreate(nullptr), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnDestroy(a), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnSetStream(a, s), CUDNN_STATUS_BAD_PARAM);
  int not_a_handle = 0;
  CHECK_EQ(cudnnGetStream(reinterpret_cast<cudnnHandle_t>(&not_a_handle), &got), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnDestroy(nullptr), CUDNN_STATUS_BAD_PARAM);
}

void test_versions_and_errors() {
  CHECK_EQ(cudnnGetVersion(), 92400);
  CHECK_EQ(cudnnGetCudartVersion(), 13000);
  CHECK_EQ(cudnnGetMaxDeviceVersion(), 1210);
  int v = -1;
  CHECK_EQ(cudnnGetProperty(MAJOR_VERSION, &v), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(v, 9);
  CHECK_EQ(cudnnGetProperty(MINOR_VERSION, &v), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(v, 24);
  CHECK_EQ(cudnnGetProperty(PATCH_LEVEL, &v), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(v, 0);
  CHECK_EQ(cudnnGetProperty(static_cast<libraryPropertyType>(7), &v), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnGetProperty(MAJOR_VERSION, nullptr), CUDNN_STATUS_BAD_PARAM);
  CHECK(strcmp(cudnnGetErrorString(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS") == 0);
  CHECK(strcmp(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED") == 0);
  CHECK(strcmp(cudnnGetErrorString(static_cast<cudnnStatus_t>(-5)), "CUDNN_STATUS_UNKNOWN") == 0);
  // The last failure's message, per thread, cut to the buffer.
  CHECK_EQ(cudnnGetProperty(MAJOR_VERSION, nullptr), CUDNN_STATUS_BAD_PARAM);
  char msg[64];
  cudnnGetLastErrorString(msg, sizeof msg);
  CHECK(strncmp(msg, "CUDNN_STATUS_BAD_PARAM: cudnnGetProperty", 40) == 0);
  char tiny[4] = {'x', 'x', 'x', 'x'};
  cudnnGetLastErrorString(tiny, sizeof tiny);
  CHECK(strcmp(tiny, "CUD") == 0);
  cudnnGetLastErrorString(nullptr, 10);  // no crash
}

}  // namespace

int card_cc() {
  using Attribute = int (*)(int*, int, int);  // cuDeviceGetAttribute(value, attribute, device)
  static auto fn = reinterpret_cast<Attribute>(dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuDeviceGetAttribute"));
  int major = 0, minor = 0;
  if (fn == nullptr || fn(&major, 75, 0) != 0 || fn(&minor, 76, 0) != 0) return 0;  // COMPUTE_CAPABILITY_MAJOR/MINOR
  return major * 10 + minor;
}

int64_t sdpa_forward_workspace() { return card_cc() / 10 == 9 ? 16 : 0; }

int main() {
  printf("selftest_cudnn: compute capability %d\n", card_cc());
  CHECK(card_cc() > 0);
  test_handles();
  test_versions_and_errors();
  cudnnHandle_t h = nullptr;
  CHECK_EQ(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  // Each file counts its own failures (selftest_check.h): add theirs.
  const int others = test_graph_store(h) + test_graph_model(h) + test_graph_execute(h) + test_legacy(h) +
                     test_threads() + build_failures();
  CHECK_EQ(cudnnDestroy(h), CUDNN_STATUS_SUCCESS);
  g_selftest_failures += others;
  return selftest_finish("selftest_cudnn");
}
