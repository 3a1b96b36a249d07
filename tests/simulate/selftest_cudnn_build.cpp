// Builders of backend descriptors for the self-test, in cudnn-frontend's
// order of calls (create, set each attribute, finalize).
#include <mutex>

#include "selftest_cudnn.h"

namespace {
constexpr int64_t kAlignment = 16;  // cudnn-frontend's default byte alignment
std::mutex g_count_mu;              // the builders run on many threads (selftest_cudnn_threads.cpp)
}  // namespace

// This file's checks count under a lock.
#undef CHECK_EQ
#define CHECK_EQ(a, b)                                 \
  do {                                                 \
    if ((a) != (b)) {                                  \
      std::lock_guard<std::mutex> lock_(g_count_mu);   \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s\n", __FILE__, __LINE__, #a, #b); \
      ++g_selftest_failures;                           \
    }                                                  \
  } while (0)

Desc::Desc(cudnnBackendDescriptorType_t type) {
  CHECK_EQ(cudnnBackendCreateDescriptor(type, &d), CUDNN_STATUS_SUCCESS);
}

Desc::~Desc() {
  if (d != nullptr) cudnnBackendDestroyDescriptor(d);
}

cudnnStatus_t Desc::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n, const void* v) {
  return cudnnBackendSetAttribute(d, name, type, n, v);
}

cudnnStatus_t Desc::set_desc(cudnnBackendAttributeName_t name, const Desc& other) {
  return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &other.d);
}

cudnnStatus_t Desc::set_int64(cudnnBackendAttributeName_t name, std::vector<int64_t> values) {
  return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data());
}

cudnnStatus_t Desc::finalize() { return cudnnBackendFinalize(d); }

std::vector<int64_t> packed(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) s[i - 1] = s[i] * dims[i];
  return s;
}

std::vector<int64_t> channels_last(const std::vector<int64_t>& dims) {
  // N, C, H, W stored as N, H, W, C.
  std::vector<int64_t> s(dims.size(), 1);
  s[1] = 1;
  int64_t step = dims[1];
  for (size_t i = dims.size() - 1; i >= 2; --i) {
    s[i] = step;
    step *= dims[i];
  }
  s[0] = step;
  return s;
}

Desc* make_tensor(int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides, cudnnDataType_t type,
                  bool is_virtual) {
  auto* t = new Desc(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t align = kAlignment;
  CHECK_EQ(t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t->set_int64(CUDNN_ATTR_TENSOR_DIMENSIONS, dims), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t->set_int64(CUDNN_ATTR_TENSOR_STRIDES, strides), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t->set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, {uid}), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t->set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(t->finalize(), CUDNN_STATUS_SUCCESS);
  return t;
}

Desc* make_graph(cudnnHandle_t handle, const std::vector<Desc*>& ops) {
  auto* g = new Desc(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  std::vector<cudnnBackendDescriptor_t> raw;
  for (Desc* op : ops) raw.push_back(op->d);
  CHECK_EQ(g->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(raw.size()),
                  raw.data()),
           CUDNN_STATUS_SUCCESS);
  CHECK_EQ(g->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(g->finalize(), CUDNN_STATUS_SUCCESS);
  return g;
}

Desc* make_conv(Desc* x, Desc* w, Desc* y) {
  Desc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const int64_t dims = 2;
  CHECK_EQ(conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(conv.finalize(), CUDNN_STATUS_SUCCESS);
  auto* op = new Desc(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  CHECK_EQ(op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, *x), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, *w), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *y), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(op->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(op->finalize(), CUDNN_STATUS_SUCCESS);
  return op;  // the convolution descriptor goes; the operation keeps it
}

Desc* make_sdpa_graph(cudnnHandle_t handle, std::vector<Desc*>* owned) {
  const std::vector<int64_t> d = {2, 4, 128, 64}, st = {2, 4, 128, 1}, one = {1, 1, 1, 1};
  Desc* q = make_tensor(0, d, packed(d), CUDNN_DATA_BFLOAT16);
  Desc* k = make_tensor(1, d, packed(d), CUDNN_DATA_BFLOAT16);
  Desc* v = make_tensor(2, d, packed(d), CUDNN_DATA_BFLOAT16);
  Desc* o = make_tensor(3, d, packed(d), CUDNN_DATA_BFLOAT16);
  Desc* stats = make_tensor(8, st, packed(st), CUDNN_DATA_FLOAT);
  auto* scale = new Desc(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const int64_t uid = 5, align = kAlignment;
  const bool by_value = true;
  scale->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
  scale->set_int64(CUDNN_ATTR_TENSOR_DIMENSIONS, one);
  scale->set_int64(CUDNN_ATTR_TENSOR_STRIDES, one);
  scale->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  scale->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  scale->set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  CHECK_EQ(scale->finalize(), CUDNN_STATUS_SUCCESS);
  auto* op = new Desc(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, *q);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, *k);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, *v);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, *o);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, *stats);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, *scale);
  CHECK_EQ(op->finalize(), CUDNN_STATUS_SUCCESS);
  Desc* g = make_graph(handle, {op});
  *owned = {q, k, v, o, stats, scale, op, g};
  return g;
}

Desc* make_pointwise_graph(cudnnHandle_t handle, std::vector<Desc*>* owned) {
  const std::vector<int64_t> d = {1, 8, 64, 64};
  Desc* x = make_tensor(1, d, packed(d), CUDNN_DATA_FLOAT);
  Desc* y = make_tensor(2, d, packed(d), CUDNN_DATA_FLOAT);
  auto* pw = new Desc(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  pw->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *x);
  pw->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, *y);
  CHECK_EQ(pw->finalize(), CUDNN_STATUS_SUCCESS);
  Desc* g = make_graph(handle, {pw});
  *owned = {x, y, pw, g};
  return g;
}

std::vector<cudnnBackendDescriptor_t> heuristics(const Desc& graph, int mode, int64_t* total) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  CHECK_EQ(heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(heur.finalize(), CUDNN_STATUS_SUCCESS);
  *total = -1;
  CHECK_EQ(cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, total,
                                    nullptr),
           CUDNN_STATUS_SUCCESS);
  std::vector<cudnnBackendDescriptor_t> cfgs(static_cast<size_t>(*total > 0 ? *total : 0));
  for (auto& c : cfgs)
    CHECK_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c), CUDNN_STATUS_SUCCESS);
  int64_t got = -1;
  CHECK_EQ(cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                    static_cast<int64_t>(cfgs.size()), &got, cfgs.data()),
           CUDNN_STATUS_SUCCESS);
  CHECK_EQ(got, *total);
  return cfgs;  // the heuristics descriptor goes; the configs stay whole
}

Desc* make_plan(cudnnHandle_t handle, cudnnBackendDescriptor_t cfg, int64_t* workspace) {
  auto* plan = new Desc(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  CHECK_EQ(plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle), CUDNN_STATUS_SUCCESS);
  CHECK_EQ(plan->set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg),
           CUDNN_STATUS_SUCCESS);
  CHECK_EQ(plan->finalize(), CUDNN_STATUS_SUCCESS);
  *workspace = -1;
  CHECK_EQ(cudnnBackendGetAttribute(plan->d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, nullptr,
                                    workspace),
           CUDNN_STATUS_SUCCESS);
  return plan;
}

int build_failures() {
  std::lock_guard<std::mutex> lock(g_count_mu);
  return g_selftest_failures;
}
