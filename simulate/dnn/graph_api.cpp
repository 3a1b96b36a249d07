// The backend API: cudnnBackendCreateDescriptor, DestroyDescriptor,
// SetAttribute, GetAttribute, Finalize, Execute (cudnn_graph_v9.h), and
// cudnnGetExecutionPlanWorkspaceSize. cudnn-frontend, compiled into
// libtorch_cuda.so, drives PyTorch's attention and convolutions through them.
#include <cstring>
#include <memory>

#include "dnn/api.h"
#include "dnn/graph_finalize.h"
#include "dnn/graph_model.h"
#include "dnn/graph_store.h"
#include "dnn/handle.h"

namespace sim::dnn::graph {
namespace {

// Attributes the library computes: set is refused (cuDNN: BAD_PARAM,
// "attributeName is not a settable attribute").
bool read_only(int name) {
  switch (name) {
    case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
    case CUDNN_ATTR_ENGINE_KNOB_INFO:
    case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE:
    case CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE:
    case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
    case CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED:
    case CUDNN_ATTR_ENGINEHEUR_RESULTS:
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: return true;
    default: return false;
  }
}

// The type cuDNN documents for the attributes the simulation reads; -1 for
// the others, which are kept as set.
int documented_type(int name) {
  switch (name) {
    case CUDNN_ATTR_TENSOR_DATA_TYPE: return CUDNN_TYPE_DATA_TYPE;
    case CUDNN_ATTR_TENSOR_DIMENSIONS:
    case CUDNN_ATTR_TENSOR_STRIDES:
    case CUDNN_ATTR_TENSOR_UNIQUE_ID:
    case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
    case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
    case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS: return CUDNN_TYPE_INT64;
    case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
    case CUDNN_ATTR_TENSOR_IS_BY_VALUE: return CUDNN_TYPE_BOOLEAN;
    case CUDNN_ATTR_OPERATIONGRAPH_HANDLE:
    case CUDNN_ATTR_EXECUTION_PLAN_HANDLE: return CUDNN_TYPE_HANDLE;
    case CUDNN_ATTR_ENGINEHEUR_MODE: return CUDNN_TYPE_HEUR_MODE;
    case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
    case CUDNN_ATTR_VARIANT_PACK_WORKSPACE: return CUDNN_TYPE_VOID_PTR;
    case CUDNN_ATTR_OPERATIONGRAPH_OPS:
    case CUDNN_ATTR_ENGINE_OPERATION_GRAPH:
    case CUDNN_ATTR_ENGINECFG_ENGINE:
    case CUDNN_ATTR_ENGINECFG_KNOB_CHOICES:
    case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH:
    case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG: return CUDNN_TYPE_BACKEND_DESCRIPTOR;
    default: return -1;
  }
}

cudnnStatus_t store(Node& n, int name, int type, int64_t count, const void* values) {
  Attr a;
  a.type = type;
  a.count = count;
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    const auto* ds = static_cast<const cudnnBackendDescriptor_t*>(values);
    for (int64_t i = 0; i < count; ++i) {
      std::shared_ptr<Node> ref = lookup(ds[i]);
      if (ref == nullptr) return fail(CUDNN_STATUS_BAD_PARAM,
                                      "cudnnBackendSetAttribute: a value is not a live descriptor");
      a.nodes.push_back(std::move(ref));
    }
  } else {
    a.bytes.resize(static_cast<size_t>(count) * element_size(type));
    if (!a.bytes.empty()) memcpy(a.bytes.data(), values, a.bytes.size());
  }
  n.attrs[name] = std::move(a);
  return CUDNN_STATUS_SUCCESS;
}

// Copies up to `requested` elements of `a` out; descriptors go into the
// caller's boxes, which must be of the kept descriptors' types.
cudnnStatus_t copy_out(const Attr& a, int64_t requested, void* out) {
  const int64_t n = requested < a.count ? requested : a.count;
  if (n <= 0 || out == nullptr) return CUDNN_STATUS_SUCCESS;
  if (a.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    memcpy(out, a.bytes.data(), static_cast<size_t>(n) * element_size(a.type));
    return CUDNN_STATUS_SUCCESS;
  }
  auto* ds = static_cast<cudnnBackendDescriptor_t*>(out);
  for (int64_t i = 0; i < n; ++i) {
    std::shared_ptr<Node> box = lookup(ds[i]);
    if (box == nullptr || box->type != a.nodes[static_cast<size_t>(i)]->type)
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "cudnnBackendGetAttribute: an output is not a live descriptor of the kept type");
  }
  for (int64_t i = 0; i < n; ++i) rebind(ds[i], a.nodes[static_cast<size_t>(i)]);
  return CUDNN_STATUS_SUCCESS;
}

// The finalized plan and variant pack of an execution, or a failure.
cudnnStatus_t execution_nodes(cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                              std::shared_ptr<Node>* p, std::shared_ptr<Node>* v) {
  *p = lookup(plan);
  *v = lookup(pack);
  if (*p == nullptr || (*p)->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !(*p)->finalized || *v == nullptr ||
      (*v)->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !(*v)->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM, "a finalized execution plan and a finalized variant pack are required");
  return CUDNN_STATUS_SUCCESS;
}

NodePtr plan_graph(const Node& plan) {
  NodePtr cfg = plan.node_at(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 0);
  NodePtr eng = cfg != nullptr ? cfg->node_at(CUDNN_ATTR_ENGINECFG_ENGINE, 0) : nullptr;
  return eng != nullptr ? eng->node_at(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, 0) : nullptr;
}

// What an execution needs of its variant pack: a pointer for each tensor the
// graph reads or writes in memory, and a workspace when the plan asks one.
cudnnStatus_t check_pack(const Node& plan, const Node& pack) {
  const std::vector<int64_t> given = pack.int64s(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  NodePtr graph = plan_graph(plan);
  for (int64_t uid : graph != nullptr ? required_uids(*graph) : std::vector<int64_t>()) {
    bool found = false;
    for (int64_t g : given) found = found || g == uid;
    if (!found) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: a tensor of the graph has no data pointer");
  }
  if (plan.int64_at(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 0, 0) > 0 &&
      pack.pointer_at(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, 0) == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM,
                "cudnnBackendExecute: the plan needs a workspace and the variant pack has none");
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace sim::dnn::graph

using sim::dnn::fail;
namespace g = sim::dnn::graph;

SIM_EXPORT cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                                                      cudnnBackendDescriptor_t* descriptor) {
  if (descriptor == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendCreateDescriptor: descriptor is NULL");
  const int type = static_cast<int>(descriptorType);
  if (type < CUDNN_BACKEND_POINTWISE_DESCRIPTOR || type > CUDNN_BACKEND_OPERATION_ROPE_BWD_DESCRIPTOR)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendCreateDescriptor: unknown descriptor type");
  auto node = std::make_shared<g::Node>();
  node->type = type;
  *descriptor = g::add(std::move(node));
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  if (!g::remove(descriptor)) return fail(CUDNN_STATUS_BAD_PARAM,
                                          "cudnnBackendDestroyDescriptor: not a live descriptor");
  return CUDNN_STATUS_SUCCESS;
}

SIM_EXPORT cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                                  cudnnBackendAttributeName_t attributeName,
                                                  cudnnBackendAttributeType_t attributeType, int64_t elementCount,
                                                  const void* arrayOfElements) {
  std::shared_ptr<g::Node> n = g::lookup(descriptor);
  const int name = static_cast<int>(attributeName), type = static_cast<int>(attributeType);
  if (n == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute: not a live descriptor");
  if (n->finalized) return fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnBackendSetAttribute: the descriptor is finalized");
  if (g::element_size(type) == 0 || elementCount < 0 || (elementCount > 0 && arrayOfElements == nullptr))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute: unknown type, negative count or NULL values");
  if (g::read_only(name)) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute: a read-only attribute");
  const int documented = g::documented_type(name);
  if (documented >= 0 && documented != type)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute: the type is not the attribute's");
  return g::store(*n, name, type, elementCount, arrayOfElements);
}

SIM_EXPORT cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                                  cudnnBackendAttributeName_t attributeName,
                                                  cudnnBackendAttributeType_t attributeType,
                                                  int64_t requestedElementCount, int64_t* elementCount,
                                                  void* arrayOfElements) {
  std::shared_ptr<g::Node> n = g::lookup(descriptor);
  if (n == nullptr || requestedElementCount < 0)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendGetAttribute: not a live descriptor, or a negative count");
  if (!n->finalized) return fail(CUDNN_STATUS_NOT_INITIALIZED,
                                 "cudnnBackendGetAttribute: the descriptor is not finalized");
  const int name = static_cast<int>(attributeName);
  if (name == CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendGetAttribute: shared memory use is not simulated");
  const g::Attr* a = n->find(name);
  if (a == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendGetAttribute: the attribute is not set");
  if (a->type != static_cast<int>(attributeType))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendGetAttribute: the type is not the attribute's");
  const cudnnStatus_t st = g::copy_out(*a, requestedElementCount, arrayOfElements);
  // With an output array, how many were copied (cudnn-frontend sizes its
  // result list by it: EngineHeuristics_v8::getEngineConfig); without one,
  // how many there are.
  if (st == CUDNN_STATUS_SUCCESS && elementCount != nullptr)
    *elementCount = arrayOfElements != nullptr && requestedElementCount < a->count ? requestedElementCount : a->count;
  return st;
}

SIM_EXPORT cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  std::shared_ptr<g::Node> n = g::lookup(descriptor);
  if (n == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: not a live descriptor");
  return g::finalize(*n);
}

// Kernels are not run: a well-formed execution succeeds at once and writes
// nothing (device memory is address space only).
SIM_EXPORT cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,
                                             cudnnBackendDescriptor_t variantPack) {
  if (!sim::dnn::live_handle(handle)) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: not a live handle");
  std::shared_ptr<g::Node> plan, pack;
  const cudnnStatus_t st = g::execution_nodes(executionPlan, variantPack, &plan, &pack);
  return st != CUDNN_STATUS_SUCCESS ? st : g::check_pack(*plan, *pack);
}

SIM_EXPORT cudnnStatus_t cudnnGetExecutionPlanWorkspaceSize(cudnnHandle_t handle,
                                                            cudnnBackendDescriptor_t executionPlan,
                                                            cudnnBackendDescriptor_t variantPack,
                                                            size_t* workspaceSizeInBytes) {
  if (!sim::dnn::live_handle(handle) || workspaceSizeInBytes == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetExecutionPlanWorkspaceSize: not a live handle, or NULL size");
  std::shared_ptr<g::Node> plan, pack;
  const cudnnStatus_t st = g::execution_nodes(executionPlan, variantPack, &plan, &pack);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  *workspaceSizeInBytes = static_cast<size_t>(plan->int64_at(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 0, 0));
  return CUDNN_STATUS_SUCCESS;
}
