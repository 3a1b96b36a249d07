// The backend descriptors keep what is set (cudnn_graph_v9.h,
// cudnnBackendSetAttribute / GetAttribute / Finalize): Get returns what Set
// stored, element counts as documented, the documented refusals.
#include "selftest_cudnn.h"

namespace {

const auto I64 = CUDNN_TYPE_INT64;

void test_lifetime() {
  cudnnBackendDescriptor_t d = nullptr;
  CHECK_EQ(cudnnBackendCreateDescriptor(static_cast<cudnnBackendDescriptorType_t>(9999), &d),
           CUDNN_STATUS_NOT_SUPPORTED);
  CHECK_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, nullptr), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &d), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(cudnnBackendDestroyDescriptor(d), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(cudnnBackendDestroyDescriptor(d), CUDNN_STATUS_BAD_PARAM);  // twice
  int64_t v = 1;
  CHECK_EQ(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, I64, 1, &v), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnBackendFinalize(d), CUDNN_STATUS_BAD_PARAM);
  int junk[4] = {};
  CHECK_EQ(cudnnBackendDestroyDescriptor(junk), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnBackendGetAttribute(junk, CUDNN_ATTR_TENSOR_UNIQUE_ID, I64, 1, nullptr, &v), CUDNN_STATUS_BAD_PARAM);
}

void test_set_get() {
  Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::vector<int64_t> dims = {2, 3, 4, 5};
  CHECK_EQ(t.set_int64(CUDNN_ATTR_TENSOR_DIMENSIONS, dims), CUDNN_STATUS_SUCCESS);
  int64_t got[8] = {}, n = -1;
  CHECK_EQ(cudnnBackendGetAttribute(t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, I64, 4, &n, got), CUDNN_STATUS_NOT_INITIALIZED);
  CHECK_EQ(t.finalize(), CUDNN_STATUS_BAD_PARAM);  // strides, id, type, alignment missing
  const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16;
  const int64_t align = 16, uid = 7;
  const bool yes = true;
  CHECK_EQ(t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_INT64, 1, &uid), CUDNN_STATUS_BAD_PARAM);  // not its type
  CHECK_EQ(t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &bf16), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t.set_int64(CUDNN_ATTR_TENSOR_STRIDES, packed(dims)), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, I64, 1, &uid), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, I64, 1, &align), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes), CUDNN_STATUS_SUCCESS);
  // An attribute the simulation does not read is kept as set.
  const double other = 2.5;
  CHECK_EQ(t.set(static_cast<cudnnBackendAttributeName_t>(912), CUDNN_TYPE_DOUBLE, 1, &other), CUDNN_STATUS_SUCCESS);
  // Hostile values are refused without a change.
  CHECK_EQ(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, static_cast<cudnnBackendAttributeType_t>(99), 1, &uid),
           CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, I64, -1, &uid), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, I64, 1, nullptr), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(t.finalize(), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t.finalize(), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, I64, 1, &uid), CUDNN_STATUS_NOT_INITIALIZED);
  // Element counts: with no output, how many there are; with one, how many
  // were copied (at most the request).
  CHECK_EQ(cudnnBackendGetAttribute(t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, I64, 0, &n, nullptr), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(n, 4);
  CHECK_EQ(cudnnBackendGetAttribute(t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, I64, 2, &n, got), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(n, 2);
  CHECK(got[0] == 2 && got[1] == 3 && got[2] == 0);
  CHECK_EQ(cudnnBackendGetAttribute(t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, I64, 8, &n, got), CUDNN_STATUS_SUCCESS);
  CHECK(n == 4 && got[3] == 5);
  double back = 0;
  CHECK_EQ(cudnnBackendGetAttribute(t.d, static_cast<cudnnBackendAttributeName_t>(912), CUDNN_TYPE_DOUBLE, 1, nullptr,
                                    &back),
           CUDNN_STATUS_SUCCESS);
  CHECK(back == 2.5);
  CHECK_EQ(cudnnBackendGetAttribute(t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT32, 8, &n, got),
           CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnBackendGetAttribute(t.d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &n, got),
           CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(cudnnBackendGetAttribute(t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, I64, -1, &n, got), CUDNN_STATUS_BAD_PARAM);
}

void test_tensor_rules() {
  const cudnnDataType_t half = CUDNN_DATA_HALF;
  auto attempt = [&](std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t align) {
    Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t uid = 1;
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &half);
    t.set_int64(CUDNN_ATTR_TENSOR_DIMENSIONS, dims);
    t.set_int64(CUDNN_ATTR_TENSOR_STRIDES, strides);
    t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, I64, 1, &uid);
    t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, I64, 1, &align);
    return t.finalize();
  };
  CHECK_EQ(attempt({2, 3}, {3, 1}, 16), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(attempt({2, 0}, {3, 1}, 16), CUDNN_STATUS_BAD_PARAM);   // a dimension not positive
  CHECK_EQ(attempt({2, 3}, {3, -1}, 16), CUDNN_STATUS_BAD_PARAM);  // a negative stride
  CHECK_EQ(attempt({2, 3}, {0, 1}, 16), CUDNN_STATUS_SUCCESS);     // 0: a broadcast dimension
  CHECK_EQ(attempt({2, 3}, {1}, 16), CUDNN_STATUS_BAD_PARAM);      // strides do not match dims
  CHECK_EQ(attempt({2, 3}, {3, 1}, 3), CUDNN_STATUS_BAD_PARAM);    // alignment not a multiple of 2 B
  CHECK_EQ(attempt({1, 1, 1, 1, 1, 1, 1, 1, 1}, packed({1, 1, 1, 1, 1, 1, 1, 1, 1}), 16), CUDNN_STATUS_BAD_PARAM);
}

// Descriptor-valued attributes keep the states: an engine config built from a
// graph whose tensors, operation and graph descriptors are all destroyed
// still makes a plan.
void test_kept_states(cudnnHandle_t h) {
  const std::vector<int64_t> xd = {2, 8, 16, 16}, wd = {4, 8, 3, 3}, yd = {2, 4, 14, 14};
  Desc* x = make_tensor('x', xd, packed(xd), CUDNN_DATA_HALF);
  Desc* w = make_tensor('w', wd, packed(wd), CUDNN_DATA_HALF);
  Desc* y = make_tensor('y', yd, packed(yd), CUDNN_DATA_HALF);
  Desc* op = make_conv(x, w, y);
  Desc* g = make_graph(h, {op});
  int64_t total = 0;
  std::vector<cudnnBackendDescriptor_t> cfgs = heuristics(*g, CUDNN_HEUR_MODE_INSTANT, &total);
  for (Desc* d : {x, w, y, op, g}) delete d;
  CHECK_EQ(total, 2);
  int64_t ws = -1;
  delete make_plan(h, cfgs.at(0), &ws);
  CHECK_EQ(ws, (2 * 8 * 16 * 16 + 4 * 8 * 3 * 3 + 2 * 4 * 14 * 14) * 2);
  // The engine of a config, got into a caller's ENGINE descriptor; into a
  // descriptor of another type it is refused.
  Desc eng(CUDNN_BACKEND_ENGINE_DESCRIPTOR), wrong(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  int64_t n = 0, index = -1;
  CHECK_EQ(cudnnBackendGetAttribute(cfgs[1], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng.d),
           CUDNN_STATUS_SUCCESS);
  CHECK_EQ(cudnnBackendGetAttribute(eng.d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, I64, 1, &n, &index), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(index, 1);
  CHECK_EQ(cudnnBackendGetAttribute(cfgs[1], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                    &wrong.d),
           CUDNN_STATUS_BAD_PARAM);
  for (auto c : cfgs) cudnnBackendDestroyDescriptor(c);
}

void test_references(cudnnHandle_t h) {
  Desc open(CUDNN_BACKEND_TENSOR_DESCRIPTOR);  // never finalized
  Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  CHECK_EQ(op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, open), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(op.finalize(), CUDNN_STATUS_BAD_PARAM);  // refers to a descriptor not finalized
  cudnnBackendDescriptor_t gone = nullptr;
  cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &gone);
  cudnnBackendDestroyDescriptor(gone);
  CHECK_EQ(op.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &gone),
           CUDNN_STATUS_BAD_PARAM);
  // A cycle of descriptors never finalized: neither finalizes, both go.
  auto* a = new Desc(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  auto* b = new Desc(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  CHECK_EQ(a->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *b), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(b->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *a), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(a->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, *a), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(a->finalize(), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(b->finalize(), CUDNN_STATUS_BAD_PARAM);
  delete a;
  delete b;
  // Read-only attributes cannot be set; an engine index past the count is not supported.
  Desc g(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  const int64_t count = 5;
  CHECK_EQ(g.set(CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, I64, 1, &count), CUDNN_STATUS_BAD_PARAM);
  CHECK_EQ(g.finalize(), CUDNN_STATUS_BAD_PARAM);  // no operations
  std::vector<Desc*> owned;
  Desc* graph = make_pointwise_graph(h, &owned);
  Desc* pw = owned.at(2);
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  engine.set_desc(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, *graph);
  engine.set_int64(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, {1});
  CHECK_EQ(engine.finalize(), CUDNN_STATUS_NOT_SUPPORTED);
  cudnnHandle_t dead = nullptr;
  cudnnCreate(&dead);
  cudnnDestroy(dead);
  Desc g2(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  g2.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw->d);
  g2.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &dead);
  CHECK_EQ(g2.finalize(), CUDNN_STATUS_BAD_PARAM);  // a handle that is not live
  for (Desc* d : owned) delete d;
}

}  // namespace

int test_graph_store(cudnnHandle_t h) {
  test_lifetime();
  test_set_get();
  test_tensor_rules();
  test_kept_states(h);
  test_references(h);
  return g_selftest_failures;
}
