// The engines and the workspace of simulate/dnn/graph_model.h, read as
// cudnn-frontend reads them: GLOBAL_COUNT, heuristics results in each mode,
// the notes on each engine, ENGINECFG_WORKSPACE_SIZE and the plan's
// WORKSPACE_SIZE, on the card of the run (simulate.cudnn: H100 and the
// tests' Fake GPU, 9.0; simulate.cudnn_a100: 8.0; simulate.cudnn_t4: 7.5).
#include "selftest_cudnn.h"

namespace {

std::vector<int32_t> notes(cudnnBackendDescriptor_t cfg) {
  Desc eng(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t n = 0;
  CHECK_EQ(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng.d),
           CUDNN_STATUS_SUCCESS);
  std::vector<int32_t> out(10, -1);
  CHECK_EQ(cudnnBackendGetAttribute(eng.d, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, 10, &n,
                                    out.data()),
           CUDNN_STATUS_SUCCESS);
  out.resize(static_cast<size_t>(n));
  return out;
}

int64_t cfg_workspace(cudnnBackendDescriptor_t cfg) {
  int64_t ws = -1;
  CHECK_EQ(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, nullptr, &ws),
           CUDNN_STATUS_SUCCESS);
  return ws;
}

// Heuristics of a one-convolution graph: the engines in order, each config's
// workspace (and its plan's, the same), in every heuristics mode.
std::vector<int64_t> conv_workspaces(cudnnHandle_t h, cudnnDataType_t type, bool nhwc, std::vector<bool>* tensor_core) {
  const std::vector<int64_t> xd = {4, 16, 32, 32}, wd = {32, 16, 3, 3}, yd = {4, 32, 32, 32};
  auto strides = [&](const std::vector<int64_t>& d) { return nhwc ? channels_last(d) : packed(d); };
  Desc* x = make_tensor('x', xd, strides(xd), type);
  Desc* w = make_tensor('w', wd, strides(wd), type);
  Desc* y = make_tensor('y', yd, strides(yd), type);
  Desc* op = make_conv(x, w, y);
  Desc* g = make_graph(h, {op});
  int64_t count = -1, total = -1;
  CHECK_EQ(cudnnBackendGetAttribute(g->d, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, nullptr,
                                    &count),
           CUDNN_STATUS_SUCCESS);
  CHECK_EQ(count, 2);
  std::vector<int64_t> out;
  for (int mode : {CUDNN_HEUR_MODE_INSTANT, CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK, CUDNN_HEUR_MODE_A}) {
    std::vector<cudnnBackendDescriptor_t> cfgs = heuristics(*g, mode, &total);
    CHECK(total >= 1);  // at least one engine config, as PyTorch needs
    std::vector<int64_t> ws;
    tensor_core->clear();
    for (auto c : cfgs) {
      int64_t plan_ws = -2;
      delete make_plan(h, c, &plan_ws);
      CHECK_EQ(plan_ws, cfg_workspace(c));
      ws.push_back(plan_ws);
      const std::vector<int32_t> n = notes(c);
      tensor_core->push_back(n.size() == 1 && n[0] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
      cudnnBackendDestroyDescriptor(c);
    }
    if (!out.empty()) CHECK(ws == out);  // the same answer in every mode
    out = ws;
  }
  for (Desc* d : {x, w, y, op, g}) delete d;
  return out;
}

void test_convolution(cudnnHandle_t h) {
  std::vector<bool> tc;
  // NCHW half: engine 0 (tensor cores) counts x, w and y transposed.
  const int64_t nchw = (4 * 16 * 32 * 32 + 32 * 16 * 9 + 4 * 32 * 32 * 32) * 2;
  CHECK(conv_workspaces(h, CUDNN_DATA_HALF, false, &tc) == std::vector<int64_t>({nchw, 0}));
  CHECK(tc == std::vector<bool>({true, false}));
  // Channels-last: nothing to transpose.
  CHECK(conv_workspaces(h, CUDNN_DATA_HALF, true, &tc) == std::vector<int64_t>({0, 0}));
  // bfloat16, and float as TF32, on tensor cores from compute capability 8.0;
  // before, only engine 1 is ranked.
  const bool ampere = card_cc() >= 80;
  using W = std::vector<int64_t>;
  CHECK(conv_workspaces(h, CUDNN_DATA_BFLOAT16, false, &tc) == (ampere ? W({nchw, 0}) : W({0})));
  CHECK(conv_workspaces(h, CUDNN_DATA_FLOAT, false, &tc) == (ampere ? W({nchw * 2, 0}) : W({0})));
  // double: no tensor-core engine; only the implicit-GEMM one is ranked.
  CHECK(conv_workspaces(h, CUDNN_DATA_DOUBLE, false, &tc) == std::vector<int64_t>({0}));
  CHECK(tc == std::vector<bool>({false}));
}

// A graph heuristics rank one engine for: its plan's workspace and notes.
int64_t single_engine(cudnnHandle_t h, const Desc& g, int mode, std::vector<int32_t>* engine_notes) {
  int64_t total = -1, ws = -1;
  std::vector<cudnnBackendDescriptor_t> cfgs = heuristics(g, mode, &total);
  CHECK_EQ(total, 1);
  delete make_plan(h, cfgs.at(0), &ws);
  *engine_notes = notes(cfgs.at(0));
  for (auto c : cfgs) cudnnBackendDestroyDescriptor(c);
  return ws;
}

// The unified SDPA forward operation: 16 B on compute capability 9.x, else 0.
void test_sdpa(cudnnHandle_t h) {
  std::vector<Desc*> owned;
  std::vector<int32_t> n;
  CHECK_EQ(single_engine(h, *make_sdpa_graph(h, &owned), CUDNN_HEUR_MODE_A, &n), sdpa_forward_workspace());
  CHECK(n == std::vector<int32_t>({CUDNN_NUMERICAL_NOTE_TENSOR_CORE}));
  for (Desc* t : owned) delete t;
}

// A pointwise graph (what the frontend's composite SDPA backward is made of,
// with matmuls and reductions): 0 B, no notes.
void test_composite(cudnnHandle_t h) {
  std::vector<Desc*> owned;
  std::vector<int32_t> n;
  Desc* g = make_pointwise_graph(h, &owned);
  CHECK_EQ(single_engine(h, *g, CUDNN_HEUR_MODE_INSTANT, &n), 0);
  CHECK(n.empty());
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);  // an unknown mode is refused at finalize
  const int bad_mode = 17;
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, *g);
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &bad_mode);
  CHECK_EQ(heur.finalize(), CUDNN_STATUS_BAD_PARAM);
  for (Desc* t : owned) delete t;
}

}  // namespace

int test_graph_model(cudnnHandle_t h) {
  test_convolution(h);
  test_sdpa(h);
  test_composite(h);
  return g_selftest_failures;
}
