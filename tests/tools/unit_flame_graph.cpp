// tools/flame_graph.cpp: the call tree of live bytes behind the HTML flame graph.
#include "tools/flame_graph.h"

#include <gtest/gtest.h>

using namespace gpumemrec::model;

namespace {

Frame native(const std::string& fn, int line) {
  Frame f;
  f.kind = FrameKind::kNative;
  f.function = fn;
  f.file = "/src/a.cpp";
  f.line = line;
  f.module = "/bin/app";
  return f;
}

// frames given outermost first (as a reader thinks of a call path); stored innermost first.
void add_stack(Bundle& b, uint64_t id, std::vector<Frame> outer_first) {
  Stack s;
  s.stack_id = id;
  s.python = "native_thread";
  s.frames.assign(outer_first.rbegin(), outer_first.rend());
  b.stack_index[id] = b.stacks.size();
  b.stacks.push_back(std::move(s));
}

void add_alloc(Bundle& b, uint64_t stack_id, uint64_t size) {
  Allocation a;
  a.stack_id = stack_id;
  a.size = size;
  a.address = 0x1000 * (b.allocations.size() + 1);
  b.allocations.push_back(a);
}

Bundle sample() {
  Bundle b;
  add_stack(b, 1, {native("main", 1), native("train", 2), native("alloc_a", 3)});
  add_stack(b, 2, {native("main", 1), native("train", 2), native("alloc_b", 4)});
  add_stack(b, 3, {native("main", 1), native("eval", 5)});
  add_alloc(b, 1, 100);
  add_alloc(b, 1, 50);
  add_alloc(b, 2, 30);
  add_alloc(b, 3, 20);
  add_alloc(b, 0, 7);    // no stack recorded
  add_alloc(b, 42, 3);   // stack missing from stacks.json
  return b;
}

TEST(FlameGraph, RootIsLiveBytesAndSubtreesAreRanges) {
  Bundle b = sample();
  auto g = gpumemrec::flame::build(b, 1000);
  ASSERT_FALSE(g.nodes.empty());
  EXPECT_EQ(g.nodes[0].bytes, 210u);
  EXPECT_EQ(g.nodes[0].count, 6u);
  EXPECT_EQ(g.nodes[0].end, static_cast<int32_t>(g.nodes.size()));
  // main (200) is the largest child: first after the root.
  EXPECT_EQ(g.labels[g.nodes[1].name].short_name, "main (a.cpp:1)");
  EXPECT_EQ(g.nodes[1].bytes, 200u);
  // Pre-order: a node comes after its parent and its range lies inside the parent's.
  for (size_t i = 1; i < g.nodes.size(); ++i) {
    const auto& n = g.nodes[i];
    EXPECT_LT(n.parent, static_cast<int32_t>(i));
    EXPECT_LE(n.end, g.nodes[n.parent].end);
    EXPECT_GT(static_cast<int32_t>(i), n.parent);
  }
  // Sites map to their deepest frame, inside main's range for stacks 1-3.
  for (uint64_t id : {1, 2, 3}) {
    int32_t leaf = g.leaf_of_stack.at(id);
    EXPECT_GE(leaf, 1);
    EXPECT_LT(leaf, g.nodes[1].end);
  }
  EXPECT_EQ(g.labels[g.nodes[g.leaf_of_stack.at(1)].name].short_name, "alloc_a (a.cpp:3)");
  EXPECT_EQ(g.nodes[g.leaf_of_stack.at(1)].bytes, 150u);
  EXPECT_EQ(g.labels[g.nodes[g.leaf_of_stack.at(0)].name].short_name, "(no stack recorded)");
  EXPECT_EQ(g.labels[g.nodes[g.leaf_of_stack.at(42)].name].short_name, "(stack not in stacks.json)");
}

TEST(FlameGraph, SameFrameDifferentAddressMerges) {
  Bundle b;
  Frame x = native("f", 10), y = native("f", 10);
  y.offset = 0x999;  // another load address, same function/file/line
  add_stack(b, 1, {x});
  add_stack(b, 2, {y});
  add_alloc(b, 1, 5);
  add_alloc(b, 2, 6);
  auto g = gpumemrec::flame::build(b, 1000);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[1].bytes, 11u);
}

TEST(FlameGraph, PrunedToMaxNodesKeepsBytes) {
  Bundle b;
  for (uint64_t id = 1; id <= 500; ++id) {
    add_stack(b, id, {native("main", 1), native("leaf" + std::to_string(id), static_cast<int>(id) + 10)});
    add_alloc(b, id, id);  // sizes 1..500
  }
  auto g = gpumemrec::flame::build(b, 50);
  EXPECT_LE(g.nodes.size(), 50u);
  EXPECT_GT(g.pruned_nodes, 0u);
  EXPECT_EQ(g.nodes[0].bytes, 500u * 501u / 2);
  EXPECT_EQ(g.nodes[1].bytes, g.nodes[0].bytes);  // main keeps every byte
  // Folded sites map to main; kept ones to their own leaf.
  EXPECT_EQ(g.leaf_of_stack.at(1), 1);
  EXPECT_NE(g.leaf_of_stack.at(500), 1);
  EXPECT_EQ(g.nodes[g.leaf_of_stack.at(500)].bytes, 500u);
  // Children stay largest first.
  for (size_t i = 2; i + 1 < g.nodes.size(); ++i) EXPECT_GE(g.nodes[i].bytes, g.nodes[i + 1].bytes);
}

TEST(FlameGraph, EmptyBundle) {
  Bundle b;
  auto g = gpumemrec::flame::build(b, 10);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].bytes, 0u);
  EXPECT_EQ(g.nodes[0].end, 1);
}

}  // namespace
