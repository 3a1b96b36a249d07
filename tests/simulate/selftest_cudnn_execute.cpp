// cudnnBackendExecute: a well-formed execution succeeds without computing; a
// tensor of the graph without a data pointer, a plan that needs a workspace
// without one, or descriptors not finalized are refused.
#include "selftest_cudnn.h"

namespace {

// A finalized variant pack of these uids (dummy device pointers) and workspace.
Desc* make_pack(const std::vector<int64_t>& uids, void* workspace) {
  auto* p = new Desc(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  std::vector<void*> ptrs(uids.size(), reinterpret_cast<void*>(0x100000000000ull));
  CHECK_EQ(p->set_int64(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(p->set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(ptrs.size()),
                  ptrs.data()),
           CUDNN_STATUS_SUCCESS);
  CHECK_EQ(p->set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(p->finalize(), CUDNN_STATUS_SUCCESS);
  return p;
}

void test_sdpa_execution(cudnnHandle_t h) {
  std::vector<Desc*> owned;
  Desc* g = make_sdpa_graph(h, &owned);
  int64_t total = 0, ws = 0;
  std::vector<cudnnBackendDescriptor_t> cfgs = heuristics(*g, CUDNN_HEUR_MODE_A, &total);
  Desc* plan = make_plan(h, cfgs.at(0), &ws);
  void* workspace = reinterpret_cast<void*>(0x100000001000ull);
  Desc* good = make_pack({0, 1, 2, 3, 5, 8}, workspace);
  CHECK_EQ(cudnnBackendExecute(h, plan->d, good->d), CUDNN_STATUS_SUCCESS);
  Desc* no_scale = make_pack({0, 1, 2, 3, 8}, workspace);  // by-value scale: not required
  CHECK_EQ(cudnnBackendExecute(h, plan->d, no_scale->d), CUDNN_STATUS_SUCCESS);
  Desc* no_stats = make_pack({0, 1, 2, 3, 5}, workspace);
  CHECK_EQ(cudnnBackendExecute(h, plan->d, no_stats->d), CUDNN_STATUS_BAD_PARAM);
  Desc* no_ws = make_pack({0, 1, 2, 3, 5, 8}, nullptr);  // refused when the plan asks 16 B
  CHECK_EQ(cudnnBackendExecute(h, plan->d, no_ws->d),
           sdpa_forward_workspace() > 0 ? CUDNN_STATUS_BAD_PARAM : CUDNN_STATUS_SUCCESS);
  CHECK_EQ(cudnnBackendExecute(h, good->d, plan->d), CUDNN_STATUS_BAD_PARAM);  // swapped
  cudnnHandle_t dead = nullptr;
  cudnnCreate(&dead);
  cudnnDestroy(dead);
  CHECK_EQ(cudnnBackendExecute(dead, plan->d, good->d), CUDNN_STATUS_BAD_PARAM);
  Desc open(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  CHECK_EQ(cudnnBackendExecute(h, plan->d, open.d), CUDNN_STATUS_BAD_PARAM);
  for (Desc* d : {good, no_scale, no_stats, no_ws, plan}) delete d;
  for (auto c : cfgs) cudnnBackendDestroyDescriptor(c);
  for (Desc* d : owned) delete d;
}

void test_pack_rules() {
  Desc p(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const std::vector<int64_t> uids = {1, 2};
  void* one = nullptr;
  p.set_int64(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids);
  p.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 1, &one);  // one pointer for two ids
  p.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &one);
  CHECK_EQ(p.finalize(), CUDNN_STATUS_BAD_PARAM);
  Desc q(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);  // no workspace attribute
  q.set_int64(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, {});
  q.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 0, nullptr);
  CHECK_EQ(q.finalize(), CUDNN_STATUS_BAD_PARAM);
}

}  // namespace

int test_graph_execute(cudnnHandle_t h) {
  test_sdpa_execution(h);
  test_pack_rules();
  return g_selftest_failures;
}
