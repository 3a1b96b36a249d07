// `dnn_oom`: a program whose cuDNN runs out of device memory by itself, for
// simulate.cudnn_recorder. One cudnnCreate (its 25,344 B and 4 B through the
// driver), then the card filled to 10 KiB free and cudnnCreate again: the
// simulated cuDNN's cuMemAlloc_v2 of 25,344 B fails and cudnnCreate returns
// CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED with nothing kept.
// Prints `OOM api=cuMemAlloc_v2 size=25344 status=<cuDNN status>`.
#include <cstdio>

#include "fill_card.h"
#include "selftest_cudnn.h"

int main() {
  cudnnHandle_t first = nullptr, second = nullptr;
  if (cudnnCreate(&first) != CUDNN_STATUS_SUCCESS || !fill_card(10u << 10)) return 1;
  const cudnnStatus_t st = cudnnCreate(&second);
  printf("OOM api=cuMemAlloc_v2 size=25344 status=%d\n", static_cast<int>(st));
  return st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED && second == nullptr ? 0 : 1;
}
