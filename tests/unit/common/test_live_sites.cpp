// The top-sites computation shared by summary.txt and `gpumemrec report`.
#include <gtest/gtest.h>

#include "common/live_sites.h"

using namespace gpumemrec::model;

namespace {

void add_alloc(Bundle* b, uint64_t stack, uint64_t size, const char* type) {
  b->allocations.emplace_back();
  b->allocations.back().stack_id = stack;
  b->allocations.back().size = size;
  b->allocations.back().memory_type = type;
}

}  // namespace

TEST(LiveSites, GroupsByStackLargestFirst) {
  Bundle b;
  auto add = [&](uint64_t stack, uint64_t size, const char* type = "device") { add_alloc(&b, stack, size, type); };
  add(7, 100);
  add(3, 60);
  add(3, 60);
  add(9, 120);
  add(5, 1 << 30, "mapping");  // a mapping range holds no memory of its own
  auto s = live_sites(b);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].stack_id, 3u);  // 120 bytes, tie with stack 9: lower id first
  EXPECT_EQ(s[0].bytes, 120u);
  EXPECT_EQ(s[0].count, 2u);
  EXPECT_EQ(s[1].stack_id, 9u);
  EXPECT_EQ(s[2].stack_id, 7u);
}

// PyTorch's expandable segments on an H200: one tensor allocation in the
// user's code reached cuMemCreate by three paths through libc10_cuda.so
// (docs/validation/2026-11-26); the report listed one line of the user's
// three times. Stacks with the same site frame and library are one site.
TEST(LiveSites, StacksWithTheSameSiteAndLibraryAreOneSite) {
  Bundle b;
  auto frame = [](FrameKind kind, const char* module, const char* function, const char* file, int64_t line) {
    Frame f;
    f.kind = kind, f.module = module, f.function = function, f.file = file, f.line = line;
    return f;
  };
  auto stack = [&](uint64_t id, const char* inner, const char* library, int64_t user_line) {
    Stack s;
    s.stack_id = id;
    s.frames = {frame(FrameKind::kNative, "/t/libc10_cuda.so", inner, "", 0),
                frame(FrameKind::kPython, "", "grow", "/home/u/train.py", user_line)};
    s.site_frame = 1;
    s.library = library;
    s.attributed = true;
    b.stack_index[id] = b.stacks.size();
    b.stacks.push_back(s);
  };
  stack(4, "map_and_commit", "libc10_cuda.so", 15);
  stack(2, "create_handle", "libc10_cuda.so", 15);
  stack(7, "retry_create", "libc10_cuda.so", 15);
  stack(9, "create_handle", "libc10_cuda.so", 16);  // another line
  stack(5, "create_handle", "libnccl.so.2", 15);    // another library
  stack(6, "create_handle", "libc10_cuda.so", 15);  // the same line, called from elsewhere
  b.stacks.back().frames.push_back(frame(FrameKind::kPython, "", "other_caller", "/home/u/train.py", 40));
  // the interpreter's own native frames differ: still the same site
  b.stacks[b.stack_index[7]].frames.push_back(frame(FrameKind::kNative, "/usr/bin/python3.12", "_PyEval", "", 0));
  auto add = [&](uint64_t stack_id, uint64_t size) { add_alloc(&b, stack_id, size, "physical"); };
  add(4, 500);
  add(4, 500);
  add(2, 300);
  add(7, 20);
  add(9, 900);
  add(5, 100);
  add(6, 60);
  add(0, 50);  // no stack recorded: a site of its own
  const auto sites = live_sites(b);
  ASSERT_EQ(sites.size(), 5u);
  EXPECT_EQ(sites[0].bytes, 1320u);
  EXPECT_EQ(sites[0].count, 4u);
  EXPECT_EQ(sites[0].stack_id, 4u);  // the largest stack of the site is the one shown
  EXPECT_EQ(sites[0].stack_ids, (std::vector<uint64_t>{4, 2, 7}));
  EXPECT_EQ(sites[1].stack_id, 9u);
  EXPECT_EQ(sites[2].stack_id, 5u);
  EXPECT_EQ(sites[3].stack_id, 6u);
  EXPECT_EQ(sites[4].stack_id, 0u);
  EXPECT_EQ(live_stacks(b).size(), 7u);  // the flame graph and `diff` keep every stack
}
