// The live bytes of a bundle as a call tree (icicle / flame graph): every
// live allocation's stack, outermost frame first, merged frame by frame
// (frames compared by tools/names.h frame_key, so native and Python frames
// stay interleaved exactly as stacks.json gives them). Nodes are in
// pre-order, children largest first, so a node's subtree is the index range
// [i, end): "which sites are under this node" is a range test.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/bundle_model.h"

namespace gpumemrec::flame {

struct Node {
  int32_t parent = -1;  // -1 for the root
  uint32_t name = 0;    // index into Graph::labels
  uint64_t bytes = 0;   // live bytes of the subtree
  uint64_t count = 0;   // live allocations of the subtree
  uint8_t kind = 0;     // 0 root/other, 1 native, 2 python
  int32_t end = 0;      // one past the last node of the subtree
};

struct Label {
  std::string short_name;  // short C++ name, file basename:line
  std::string full_name;   // as symbolized
};

struct Graph {
  std::vector<Node> nodes;  // nodes[0] is the root ("all live allocations")
  std::vector<Label> labels;
  std::unordered_map<uint64_t, int32_t> leaf_of_stack;  // stack_id -> deepest kept node
  size_t pruned_nodes = 0;  // nodes folded into their parent to stay under max_nodes
};

// At most max_nodes nodes: the smallest subtrees are folded into their
// parents (their bytes still count in every ancestor).
Graph build(const model::Bundle& b, size_t max_nodes);

}  // namespace gpumemrec::flame
