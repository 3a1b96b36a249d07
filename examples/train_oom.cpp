// A plain CUDA runtime program that behaves like a training job running out of
// memory: weights, optimizer state, per-step activations, a small leak, and a
// batch size that grows until cudaMalloc fails. It knows nothing about
// gpumemrec. Build it with nvcc on a GPU machine (scripts/demo.sh does) or
// against the simulated driver (examples/CMakeLists.txt).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define NOINLINE __attribute__((noinline))

namespace {

size_t g_scale = 1;  // bytes per "unit"; demo.sh picks it from the GPU size

bool check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return true;
  std::fprintf(stderr, "train_oom: %s failed: %s (%d)\n", what, cudaGetErrorName(rc), int(rc));
  return false;
}

NOINLINE bool load_model_weights(std::vector<void*>* weights, int layers) {
  for (int i = 0; i < layers; ++i) {
    void* p = nullptr;
    if (!check(cudaMalloc(&p, 64 * g_scale), "cudaMalloc(weights)")) return false;
    weights->push_back(p);
  }
  return true;
}

NOINLINE bool allocate_optimizer_state(std::vector<void*>* state, int layers) {
  for (int i = 0; i < 2 * layers; ++i) {  // Adam: two moments per weight
    void* p = nullptr;
    if (!check(cudaMalloc(&p, 64 * g_scale), "cudaMalloc(optimizer)")) return false;
    state->push_back(p);
  }
  return true;
}

NOINLINE void* cache_attention_mask(int step) {
  // Forgotten cache: allocated every step, never freed.
  void* p = nullptr;
  cudaMalloc(&p, 4 * g_scale + size_t(step) * 4096);
  return p;
}

NOINLINE bool forward_layer(std::vector<void*>* activations, size_t batch) {
  void* p = nullptr;
  if (!check(cudaMalloc(&p, batch * 8 * g_scale), "cudaMalloc(activations)")) return false;
  activations->push_back(p);
  return true;
}

NOINLINE bool train_step(int step, int layers, size_t batch, std::vector<void*>* leaks) {
  std::vector<void*> activations;
  bool ok = true;
  for (int l = 0; l < layers && ok; ++l) ok = forward_layer(&activations, batch);
  leaks->push_back(cache_attention_mask(step));
  for (void* p : activations) cudaFree(p);  // backward done: activations released
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  g_scale = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : (1u << 20);
  const int layers = 12;
  std::vector<void*> weights, state, leaks;
  if (!load_model_weights(&weights, layers) || !allocate_optimizer_state(&state, layers)) return 1;
  std::printf("train_oom: model loaded (%d layers), training with a growing batch\n", layers);
  size_t batch = 1;
  for (int step = 0; step < 1000; ++step) {
    if (!train_step(step, layers, batch, &leaks)) {
      std::printf("train_oom: CUDA out of memory at step %d with batch %zu\n", step, batch);
      return 1;
    }
    batch += 1;
  }
  std::printf("train_oom: finished without running out of memory\n");
  return 0;
}
