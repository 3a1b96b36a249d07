// Threads at once (PyTorch keeps a cuDNN handle and plan caches per thread,
// aten/src/ATen/cudnn/Handle.cpp, MHA.cpp; its autograd engine runs the
// backward on another thread): each makes its handle, builds, plans and
// executes graphs and destroys everything, while the descriptor registry and
// the handle list are shared.
#include <atomic>
#include <thread>

#include "selftest_cudnn.h"

namespace {

std::atomic<int> g_bad{0};

void worker(int rounds) {
  for (int i = 0; i < rounds; ++i) {
    cudnnHandle_t h = nullptr;
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) ++g_bad;
    std::vector<Desc*> owned;
    Desc* g = make_sdpa_graph(h, &owned);
    int64_t total = 0, ws = 0;
    std::vector<cudnnBackendDescriptor_t> cfgs = heuristics(*g, CUDNN_HEUR_MODE_A, &total);
    for (Desc* d : owned) delete d;  // the configs keep what they need
    Desc* plan = make_plan(h, cfgs.at(0), &ws);
    if (ws != sdpa_forward_workspace()) ++g_bad;
    Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    const std::vector<int64_t> uids = {0, 1, 2, 3, 8};
    std::vector<void*> ptrs(uids.size(), &ws);
    void* workspace = &total;
    pack.set_int64(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids);
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 5, ptrs.data());
    pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    if (pack.finalize() != CUDNN_STATUS_SUCCESS || cudnnBackendExecute(h, plan->d, pack.d) != CUDNN_STATUS_SUCCESS)
      ++g_bad;
    delete plan;
    for (auto c : cfgs) cudnnBackendDestroyDescriptor(c);
    if (cudnnDestroy(h) != CUDNN_STATUS_SUCCESS) ++g_bad;
  }
}

}  // namespace

int test_threads() {
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) ts.emplace_back(worker, 50);
  for (auto& t : ts) t.join();
  CHECK_EQ(g_bad.load(), 0);
  return g_selftest_failures;
}
