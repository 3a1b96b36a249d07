#include "dnn/graph_store.h"

#include <cstring>
#include <mutex>
#include <unordered_map>

namespace sim::dnn::graph {
namespace {

struct Box {
  std::shared_ptr<Node> node;
};

std::mutex g_mu;
std::unordered_map<cudnnBackendDescriptor_t, Box*>& boxes() {
  static auto* live = new std::unordered_map<cudnnBackendDescriptor_t, Box*>();  // usable at exit
  return *live;
}

template <typename T>
bool element(const Node& n, int name, int64_t i, T* out) {
  const Attr* a = n.find(name);
  if (a == nullptr || i < 0 || i >= a->count || element_size(a->type) != sizeof(T)) return false;
  memcpy(out, a->bytes.data() + i * sizeof(T), sizeof(T));
  return true;
}

}  // namespace

const Attr* Node::find(int name) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : &it->second;
}

int64_t Node::int64_at(int name, int64_t i, int64_t fallback) const {
  int64_t v = 0;
  return element(*this, name, i, &v) ? v : fallback;
}

int32_t Node::int32_at(int name, int64_t i, int32_t fallback) const {
  int32_t v = 0;
  return element(*this, name, i, &v) ? v : fallback;
}

bool Node::bool_at(int name, bool fallback) const {
  unsigned char v = 0;
  return element(*this, name, 0, &v) ? v != 0 : fallback;
}

const void* Node::pointer_at(int name, int64_t i) const {
  void* v = nullptr;
  return element(*this, name, i, &v) ? v : nullptr;
}

std::vector<int64_t> Node::int64s(int name) const {
  std::vector<int64_t> out;
  const Attr* a = find(name);
  if (a == nullptr || element_size(a->type) != sizeof(int64_t)) return out;
  out.resize(static_cast<size_t>(a->count));
  if (!out.empty()) memcpy(out.data(), a->bytes.data(), out.size() * sizeof(int64_t));
  return out;
}

NodePtr Node::node_at(int name, int64_t i) const {
  const Attr* a = find(name);
  if (a == nullptr || i < 0 || i >= static_cast<int64_t>(a->nodes.size())) return nullptr;
  return a->nodes[static_cast<size_t>(i)];
}

// cudnn_graph_v9.h, cudnnBackendAttributeType_t: handles, pointers and
// descriptors are pointers; BOOLEAN is a bool and CHAR a char; FRACTION is
// cudnnFraction_t (two int64_t); the rest are int64_t, double, or 4-byte
// enumerations, floats and int32_t.
size_t element_size(int type) {
  switch (type) {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(void*);
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE: return 8;
    case CUDNN_TYPE_BOOLEAN:
    case CUDNN_TYPE_CHAR: return 1;
    case CUDNN_TYPE_FRACTION: return 16;
    default: return type > CUDNN_TYPE_HANDLE && type <= CUDNN_TYPE_OPERATIONGRAPH_MODE ? 4 : 0;
  }
}

size_t data_type_size(int data_type) {
  switch (data_type) {
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
    case CUDNN_DATA_COMPLEX_FP32: return 8;
    case CUDNN_DATA_COMPLEX_FP64: return 16;
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
    case CUDNN_DATA_UINT32:
    case CUDNN_DATA_INT8x4:
    case CUDNN_DATA_UINT8x4:
    case CUDNN_DATA_FAST_FLOAT_FOR_FP8: return 4;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16: return 2;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
    case CUDNN_DATA_FP8_E8M0: return 1;
    case CUDNN_DATA_INT8x32: return 32;
    default: return 0;
  }
}

cudnnBackendDescriptor_t add(std::shared_ptr<Node> node) {
  auto* box = new Box{std::move(node)};
  std::lock_guard<std::mutex> lock(g_mu);
  boxes().emplace(box, box);
  return box;
}

std::shared_ptr<Node> lookup(cudnnBackendDescriptor_t d) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = boxes().find(d);
  return it == boxes().end() ? nullptr : it->second->node;
}

bool rebind(cudnnBackendDescriptor_t d, NodePtr node) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = boxes().find(d);
  if (it == boxes().end()) return false;
  // A finalized state is never written again (Set and Finalize refuse it),
  // so sharing it mutable-typed changes nothing.
  it->second->node = std::const_pointer_cast<Node>(std::move(node));
  return true;
}

bool remove(cudnnBackendDescriptor_t d) {
  Box* box = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = boxes().find(d);
    if (it == boxes().end()) return false;
    box = it->second;
    boxes().erase(it);
  }
  // A state never finalized can be in a cycle (A set as B's attribute and B
  // as A's: neither can be finalized then). Nothing finalized refers to it,
  // so its attributes can go, which breaks the cycle; a finalized state only
  // refers to states finalized before it.
  if (!box->node->finalized) box->node->attrs.clear();
  delete box;
  return true;
}

}  // namespace sim::dnn::graph
