#include "dnn/graph_finalize.h"

#include <cstring>
#include <memory>

#include "dnn/api.h"
#include "dnn/graph_model.h"
#include "dnn/handle.h"

namespace sim::dnn::graph {
namespace {

constexpr int64_t kMaxDims = 8;  // CUDNN_DIM_MAX

template <typename T>
void set_values(Node& n, int name, int type, const std::vector<T>& values) {
  Attr a;
  a.type = type;
  a.count = static_cast<int64_t>(values.size());
  a.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) memcpy(a.bytes.data(), values.data(), a.bytes.size());
  n.attrs[name] = std::move(a);
}

void set_nodes(Node& n, int name, std::vector<NodePtr> nodes) {
  Attr a;
  a.type = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  a.count = static_cast<int64_t>(nodes.size());
  a.nodes = std::move(nodes);
  n.attrs[name] = std::move(a);
}

bool has(const Node& n, int name) { return n.find(name) != nullptr; }

// Since cuDNN 9.8 an operation graph and a plan may be built without a
// handle (cudnn-frontend's OperationGraph_v8::build sets one only when it has
// one: "handle is not a must-have after cudnn 9.8.0"); one that is set must
// be live.
bool optional_handle(const Node& n, int name) {
  return !has(n, name) || live_handle(static_cast<cudnnHandle_t>(const_cast<void*>(n.pointer_at(name, 0))));
}

// Every descriptor an attribute names must be finalized first (cuDNN:
// CUDNN_STATUS_BAD_PARAM, "the operation graph descriptor set is not
// already finalized").
bool references_finalized(const Node& n) {
  for (const auto& kv : n.attrs)
    for (const NodePtr& ref : kv.second.nodes)
      if (ref == nullptr || !ref->finalized) return false;
  return true;
}

cudnnStatus_t tensor(const Node& n) {
  if (!has(n, CUDNN_ATTR_TENSOR_UNIQUE_ID) || !has(n, CUDNN_ATTR_TENSOR_DATA_TYPE) ||
      !has(n, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT) || !has(n, CUDNN_ATTR_TENSOR_DIMENSIONS) ||
      !has(n, CUDNN_ATTR_TENSOR_STRIDES))
    return fail(CUDNN_STATUS_BAD_PARAM,
                "tensor: a required attribute (id, data type, alignment, dims, strides) is not set");
  const std::vector<int64_t> dims = n.int64s(CUDNN_ATTR_TENSOR_DIMENSIONS);
  const std::vector<int64_t> strides = n.int64s(CUDNN_ATTR_TENSOR_STRIDES);
  if (dims.empty() || static_cast<int64_t>(dims.size()) > kMaxDims || dims.size() != strides.size())
    return fail(CUDNN_STATUS_BAD_PARAM,
                "tensor: dimensions and strides must be 1..8 values each, as many strides as dims");
  // A stride of 0 repeats the tensor along that dimension (cudnn-frontend
  // 1.5.2's release notes, NVIDIA/cudnn-frontend#86); PyTorch passes
  // broadcast masks and inputs so (test_transformers.py,
  // test_cudnn_attention_broadcast_stride_zero; transformers' StaticCache
  // attention on an H100).
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] <= 0 || strides[i] < 0)
      return fail(CUDNN_STATUS_BAD_PARAM, "tensor: a dimension is not positive or a stride is negative");
  const int64_t align = n.int64_at(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 0, 0);
  const int64_t size = static_cast<int64_t>(data_type_size(n.int32_at(CUDNN_ATTR_TENSOR_DATA_TYPE, 0, -1)));
  if (align <= 0 || (size > 0 && align % size != 0))
    return fail(CUDNN_STATUS_BAD_PARAM, "tensor: the byte alignment is not a multiple of the data type's size");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t operation_graph(Node& n) {
  const Attr* ops = n.find(CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (ops == nullptr || ops->count < 1)
    return fail(CUDNN_STATUS_BAD_PARAM, "operation graph: no operations (CUDNN_ATTR_OPERATIONGRAPH_OPS)");
  if (!optional_handle(n, CUDNN_ATTR_OPERATIONGRAPH_HANDLE))
    return fail(CUDNN_STATUS_BAD_PARAM, "operation graph: the handle is not a live cuDNN handle");
  set_values<int64_t>(n, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, {engine_count(n)});
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t engine(Node& n) {
  NodePtr graph = n.node_at(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, 0);
  if (graph == nullptr || graph->type != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR ||
      !has(n, CUDNN_ATTR_ENGINE_GLOBAL_INDEX))
    return fail(CUDNN_STATUS_BAD_PARAM, "engine: the operation graph and the global index are required");
  const int64_t index = n.int64_at(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 0, -1);
  if (index < 0 || index >= engine_count(*graph))
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "engine: the global index is not below the graph's engine count");
  set_values<int32_t>(n, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, numerical_notes(*graph, index));
  set_values<int32_t>(n, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, {});
  set_nodes(n, CUDNN_ATTR_ENGINE_KNOB_INFO, {});  // no tuning knobs
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t engine_config(Node& n) {
  NodePtr eng = n.node_at(CUDNN_ATTR_ENGINECFG_ENGINE, 0);
  if (eng == nullptr || eng->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR)
    return fail(CUDNN_STATUS_BAD_PARAM, "engine config: the engine is required");
  NodePtr graph = eng->node_at(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, 0);
  const int64_t index = eng->int64_at(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 0, -1);
  if (!engine_supports(*graph, index))
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "engine config: the engine does not support this graph's data types");
  if (!has(n, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES)) set_nodes(n, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, {});
  set_values<int64_t>(n, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, {workspace_bytes(*graph, index)});
  return CUDNN_STATUS_SUCCESS;
}

// A finalized engine config of `engine` on `graph`, as heuristics return it.
NodePtr ranked_config(const NodePtr& graph, int64_t index) {
  auto eng = std::make_shared<Node>();
  eng->type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
  set_nodes(*eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, {graph});
  set_values<int64_t>(*eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, {index});
  auto cfg = std::make_shared<Node>();
  cfg->type = CUDNN_BACKEND_ENGINECFG_DESCRIPTOR;
  if (finalize(*eng) != CUDNN_STATUS_SUCCESS) return nullptr;
  set_nodes(*cfg, CUDNN_ATTR_ENGINECFG_ENGINE, {eng});
  return finalize(*cfg) == CUDNN_STATUS_SUCCESS ? cfg : nullptr;
}

cudnnStatus_t engine_heuristics(Node& n) {
  NodePtr graph = n.node_at(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 0);
  const int32_t mode = n.int32_at(CUDNN_ATTR_ENGINEHEUR_MODE, 0, -1);
  if (graph == nullptr || graph->type != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR || mode < 0 ||
      mode >= CUDNN_HEUR_MODES_COUNT)
    return fail(CUDNN_STATUS_BAD_PARAM, "engine heuristics: the operation graph and a known mode are required");
  std::vector<NodePtr> configs;
  for (int64_t e : ranked_engines(*graph))
    if (NodePtr cfg = ranked_config(graph, e)) configs.push_back(cfg);
  set_nodes(n, CUDNN_ATTR_ENGINEHEUR_RESULTS, std::move(configs));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t execution_plan(Node& n) {
  NodePtr cfg = n.node_at(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 0);
  if (cfg == nullptr && has(n, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION))
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "execution plan: loading a serialized plan is not simulated");
  if (cfg == nullptr || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR ||
      !optional_handle(n, CUDNN_ATTR_EXECUTION_PLAN_HANDLE))
    return fail(CUDNN_STATUS_BAD_PARAM, "execution plan: an engine config is required, and a handle set must be live");
  set_values<int64_t>(n, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                      {cfg->int64_at(CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, 0, 0)});
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t variant_pack(const Node& n) {
  const Attr* uids = n.find(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const Attr* ptrs = n.find(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  if (uids == nullptr || ptrs == nullptr || !has(n, CUDNN_ATTR_VARIANT_PACK_WORKSPACE))
    return fail(CUDNN_STATUS_BAD_PARAM, "variant pack: unique ids, data pointers and workspace are required");
  if (uids->count != ptrs->count)
    return fail(CUDNN_STATUS_BAD_PARAM, "variant pack: as many data pointers as unique ids are required");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t by_type(Node& n) {
  switch (n.type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return tensor(n);
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return operation_graph(n);
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return engine(n);
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return engine_config(n);
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return engine_heuristics(n);
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return execution_plan(n);
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return variant_pack(n);
    default: return CUDNN_STATUS_SUCCESS;
  }
}

}  // namespace

cudnnStatus_t finalize(Node& n) {
  if (n.finalized) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: the descriptor is already finalized");
  if (!references_finalized(n))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: a descriptor set as an attribute is not finalized");
  const cudnnStatus_t st = by_type(n);
  if (st == CUDNN_STATUS_SUCCESS) n.finalized = true;
  return st;
}

}  // namespace sim::dnn::graph
