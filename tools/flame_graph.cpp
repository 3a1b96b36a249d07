#include "tools/flame_graph.h"

#include <algorithm>
#include <map>

#include "tools/analysis.h"
#include "common/names.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::flame {
namespace {

// The merge tree before ordering and pruning.
struct Trie {
  struct TNode {
    int32_t parent = -1;
    uint32_t label = 0;
    uint8_t kind = 0;
    uint64_t bytes = 0, count = 0;
    std::unordered_map<std::string, int32_t> children;  // frame_key -> node
  };
  std::vector<TNode> nodes;
  std::vector<Label> labels;
  std::unordered_map<std::string, uint32_t> label_index;

  uint32_t intern(const std::string& key, Label l) {
    auto it = label_index.find(key);
    if (it != label_index.end()) return it->second;
    labels.push_back(std::move(l));
    return label_index[key] = static_cast<uint32_t>(labels.size() - 1);
  }
  int32_t child(int32_t at, const std::string& key, Label l, uint8_t kind) {
    auto it = nodes[at].children.find(key);
    if (it != nodes[at].children.end()) return it->second;
    TNode n;
    n.parent = at;
    n.kind = kind;
    n.label = intern(key, std::move(l));
    nodes.push_back(std::move(n));
    int32_t id = static_cast<int32_t>(nodes.size() - 1);
    nodes[at].children[key] = id;
    return id;
  }
};

// Adds one call site (stack_id with its live bytes) to the trie; returns its
// deepest node.
int32_t add_site(Trie& t, const Bundle& b, const analysis::Site& s) {
  int32_t at = 0;
  t.nodes[0].bytes += s.bytes;
  t.nodes[0].count += s.count;
  const Stack* st = s.stack_id ? b.find_stack(s.stack_id) : nullptr;
  if (!st || st->frames.empty()) {
    std::string l = !s.stack_id ? "(no stack recorded)" : !st ? "(stack not in stacks.json)" : "(empty stack)";
    at = t.child(at, "\x1e" + l, {l, l}, 0);
    t.nodes[at].bytes += s.bytes;
    t.nodes[at].count += s.count;
    return at;
  }
  for (auto f = st->frames.rbegin(); f != st->frames.rend(); ++f) {  // outermost first
    uint8_t kind = f->kind == FrameKind::kPython ? 2 : f->kind == FrameKind::kNative ? 1 : 0;
    at = t.child(at, names::frame_key(*f), {names::frame_label(*f, false), names::frame_label(*f, true)}, kind);
    t.nodes[at].bytes += s.bytes;
    t.nodes[at].count += s.count;
  }
  return at;
}

// Smallest subtree size kept so that at most max_nodes nodes remain.
uint64_t keep_threshold(const Trie& t, size_t max_nodes) {
  if (t.nodes.size() <= max_nodes) return 0;
  std::vector<uint64_t> sizes;
  sizes.reserve(t.nodes.size());
  for (const auto& n : t.nodes) sizes.push_back(n.bytes);
  std::nth_element(sizes.begin(), sizes.begin() + (max_nodes - 1), sizes.end(), std::greater<uint64_t>());
  return sizes[max_nodes - 1] + 1;  // strictly above: ties are dropped together
}

// Pre-order copy of the kept nodes, children largest first. map[trie id] =
// graph id, or the nearest kept ancestor's for a folded node.
void emit(const Trie& t, uint64_t threshold, Graph* g, std::vector<int32_t>* map) {
  map->assign(t.nodes.size(), 0);
  struct Item {
    int32_t trie, parent_out;
  };
  std::vector<Item> stack{{0, -1}};
  while (!stack.empty()) {
    Item it = stack.back();
    stack.pop_back();
    const auto& tn = t.nodes[it.trie];
    int32_t out = static_cast<int32_t>(g->nodes.size());
    g->nodes.push_back({it.parent_out, tn.label, tn.bytes, tn.count, tn.kind, 0});
    (*map)[it.trie] = out;
    std::vector<int32_t> kids;
    for (auto& kv : tn.children) {
      if (t.nodes[kv.second].bytes >= threshold) kids.push_back(kv.second);
      else ++g->pruned_nodes;
    }
    std::sort(kids.begin(), kids.end(), [&](int32_t x, int32_t y) {
      if (t.nodes[x].bytes != t.nodes[y].bytes) return t.nodes[x].bytes < t.nodes[y].bytes;  // reversed: stack pops last first
      return t.labels[t.nodes[x].label].full_name > t.labels[t.nodes[y].label].full_name;
    });
    for (int32_t k : kids) stack.push_back({k, out});
  }
  // Subtree ends: children come after their parent, so one backward pass.
  for (size_t i = 0; i < g->nodes.size(); ++i) g->nodes[i].end = static_cast<int32_t>(i + 1);
  for (size_t i = g->nodes.size(); i-- > 1;) {
    Node& n = g->nodes[i];
    g->nodes[n.parent].end = std::max(g->nodes[n.parent].end, n.end);
  }
  // Folded nodes map to their nearest kept ancestor (parents precede children in the trie).
  for (size_t i = 1; i < t.nodes.size(); ++i)
    if (t.nodes[i].bytes < threshold) (*map)[i] = (*map)[t.nodes[i].parent];
}

}  // namespace

Graph build(const Bundle& b, size_t max_nodes) {
  Trie t;
  t.nodes.emplace_back();
  t.labels.push_back({"all live allocations", "all live allocations"});
  std::vector<std::pair<uint64_t, int32_t>> site_leaf;
  for (const auto& s : model::live_stacks(b)) site_leaf.push_back({s.stack_id, add_site(t, b, s)});
  Graph g;
  std::vector<int32_t> map;
  emit(t, keep_threshold(t, std::max<size_t>(max_nodes, 2)), &g, &map);
  g.labels = std::move(t.labels);
  for (auto& sl : site_leaf) g.leaf_of_stack[sl.first] = map[sl.second];
  return g;
}

}  // namespace gpumemrec::flame
