#include "dnn/graph_model.h"

#include <algorithm>

#include "core/card.h"

namespace sim::dnn::graph {
namespace {

bool is_conv(int op) {
  return op == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
         op == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
         op == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
}

bool uses_tensor_cores(int op) {
  return is_conv(op) || op == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR ||
         op == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR || op == CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR;
}

std::vector<NodePtr> operations(const Node& opgraph) {
  const Attr* ops = opgraph.find(CUDNN_ATTR_OPERATIONGRAPH_OPS);
  return ops != nullptr ? ops->nodes : std::vector<NodePtr>();
}

bool has_op(const Node& opgraph, bool (*match)(int)) {
  for (const NodePtr& op : operations(opgraph))
    if (op != nullptr && match(op->type)) return true;
  return false;
}

// The tensors an operation names directly (its descriptor-valued attributes).
std::vector<NodePtr> operands(const Node& op) {
  std::vector<NodePtr> out;
  for (const auto& kv : op.attrs)
    for (const NodePtr& n : kv.second.nodes)
      if (n != nullptr && n->type == CUDNN_BACKEND_TENSOR_DESCRIPTOR) out.push_back(n);
  return out;
}

// Channels-last: dimension 1 (C) is the innermost, or there is one channel.
bool channels_last(const Node& t) {
  const std::vector<int64_t> dims = t.int64s(CUDNN_ATTR_TENSOR_DIMENSIONS);
  const std::vector<int64_t> strides = t.int64s(CUDNN_ATTR_TENSOR_STRIDES);
  if (dims.size() < 3 || strides.size() != dims.size()) return true;
  return dims[1] == 1 || strides[1] == 1;
}

int64_t packed_bytes(const Node& t) {
  int64_t n = static_cast<int64_t>(data_type_size(t.int32_at(CUDNN_ATTR_TENSOR_DATA_TYPE, 0, CUDNN_DATA_FLOAT)));
  for (int64_t d : t.int64s(CUDNN_ATTR_TENSOR_DIMENSIONS)) n *= d;
  return n;
}

bool tensor_core_type(const Node& conv) {
  const std::vector<NodePtr> ts = operands(conv);
  if (ts.empty()) return false;
  const int dt = ts.front()->int32_at(CUDNN_ATTR_TENSOR_DATA_TYPE, 0, CUDNN_DATA_FLOAT);
  // Tensor cores: half from Volta (7.0); bfloat16 and float as TF32 from
  // Ampere (8.0).
  const int cc = sim::card().cc_major;
  if (dt == CUDNN_DATA_HALF) return cc >= 7;
  return (dt == CUDNN_DATA_BFLOAT16 || dt == CUDNN_DATA_FLOAT) && cc >= 8;
}

// Engine 0's workspace for one convolution: its operands' NHWC copies.
int64_t conv_transposes(const Node& conv) {
  int64_t bytes = 0;
  for (const NodePtr& t : operands(conv))
    if (!t->bool_at(CUDNN_ATTR_TENSOR_IS_VIRTUAL, false) && !channels_last(*t)) bytes += packed_bytes(*t);
  return bytes;
}

}  // namespace

int64_t engine_count(const Node& opgraph) { return has_op(opgraph, is_conv) ? 2 : 1; }

bool engine_supports(const Node& opgraph, int64_t engine) {
  if (engine < 0 || engine >= engine_count(opgraph)) return false;
  if (engine == 1) return true;
  for (const NodePtr& op : operations(opgraph))
    if (op != nullptr && is_conv(op->type) && !tensor_core_type(*op)) return false;
  return true;
}

std::vector<int32_t> numerical_notes(const Node& opgraph, int64_t engine) {
  if (engine == 0 && has_op(opgraph, uses_tensor_cores)) return {CUDNN_NUMERICAL_NOTE_TENSOR_CORE};
  return {};
}

int64_t workspace_bytes(const Node& opgraph, int64_t engine) {
  if (engine != 0) return 0;
  int64_t bytes = 0;
  for (const NodePtr& op : operations(opgraph)) {
    if (op == nullptr) continue;
    if (is_conv(op->type)) bytes += conv_transposes(*op);
    if (op->type == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR && sim::card().cc_major == 9) bytes += 16;
  }
  return bytes;
}

std::vector<int64_t> ranked_engines(const Node& opgraph) {
  std::vector<int64_t> out;
  for (int64_t e = 0; e < engine_count(opgraph); ++e)
    if (engine_supports(opgraph, e)) out.push_back(e);
  return out;
}

std::vector<int64_t> required_uids(const Node& opgraph) {
  std::vector<int64_t> out;
  for (const NodePtr& op : operations(opgraph)) {
    if (op == nullptr) continue;
    for (const NodePtr& t : operands(*op)) {
      if (t->bool_at(CUDNN_ATTR_TENSOR_IS_VIRTUAL, false) || t->bool_at(CUDNN_ATTR_TENSOR_IS_BY_VALUE, false)) continue;
      out.push_back(t->int64_at(CUDNN_ATTR_TENSOR_UNIQUE_ID, 0, -1));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace sim::dnn::graph
