// The backend API's descriptors (cudnnBackendCreateDescriptor ...): what each
// keeps of what was set, and the registry of the live ones.
//
// A descriptor is a box around a state (Node). An attribute whose values are
// descriptors keeps their states, not the boxes: a finalized state is never
// changed again (cudnnBackendSetAttribute refuses a finalized descriptor), so
// an engine config keeps its engine and operation graph whole after the
// caller destroys their descriptors, as PyTorch's convolutions do
// (aten/src/ATen/native/cudnn/Conv_v8.cpp: the operation graph is gone when
// the plan is built from a heuristics result). Getting a descriptor-valued
// attribute puts the kept state into the caller's boxes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "dnn/types.h"

namespace sim::dnn::graph {

struct Node;
using NodePtr = std::shared_ptr<const Node>;

struct Attr {
  int type = 0;                      // cudnnBackendAttributeType_t
  int64_t count = 0;                 // elements
  std::vector<unsigned char> bytes;  // count * element_size(type); empty for descriptors
  std::vector<NodePtr> nodes;        // CUDNN_TYPE_BACKEND_DESCRIPTOR: the states set
};

struct Node {
  int type = 0;  // cudnnBackendDescriptorType_t
  bool finalized = false;
  std::map<int, Attr> attrs;  // by cudnnBackendAttributeName_t

  const Attr* find(int name) const;
  // The i-th element of a scalar attribute of an 8-byte / 4-byte / 1-byte
  // type, or `fallback` when it is not set or shorter.
  int64_t int64_at(int name, int64_t i, int64_t fallback) const;
  int32_t int32_at(int name, int64_t i, int32_t fallback) const;
  bool bool_at(int name, bool fallback) const;
  const void* pointer_at(int name, int64_t i) const;
  std::vector<int64_t> int64s(int name) const;
  // The i-th descriptor of a descriptor-valued attribute, or nullptr.
  NodePtr node_at(int name, int64_t i) const;
};

// Bytes of one element of an attribute type (cudnnBackendAttributeType_t);
// 0 for a type cuDNN 9.24 does not have.
size_t element_size(int type);
// Bytes of one element of a tensor data type (cudnnDataType_t), 0 for the
// sub-byte ones (FP4, INT4) and unknown ones.
size_t data_type_size(int data_type);

// The registry. A descriptor is valid from cudnnBackendCreateDescriptor to
// cudnnBackendDestroyDescriptor.
cudnnBackendDescriptor_t add(std::shared_ptr<Node> node);
// The state of a live descriptor (nullptr for anything else).
std::shared_ptr<Node> lookup(cudnnBackendDescriptor_t d);
// Puts the finalized state `node` into the live descriptor `d` (getting a
// descriptor-valued attribute).
bool rebind(cudnnBackendDescriptor_t d, NodePtr node);
bool remove(cudnnBackendDescriptor_t d);

}  // namespace sim::dnn::graph
