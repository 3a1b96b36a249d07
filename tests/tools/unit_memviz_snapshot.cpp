// The memory-viz plan: the trace replayed forward from its initial state
// must end exactly in the final segments, whatever the ring looks like.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/frame_order.h"
#include "common/memviz_snapshot.h"
#include "common/pickle_writer.h"

using namespace gpumemrec::model;  // the tools' bundle model

using namespace gpumemrec;

namespace {

struct B {
  Bundle b;
  uint64_t seq = 100;
  double t = 1000.0;
  void ev(const char* type, uint64_t addr, uint64_t size, int dev = 0, const char* mtype = "device", int64_t result = 0,
          uint64_t stack = 0) {
    Event e;
    e.seq = seq++;
    e.timestamp = (t += 0.001);
    e.kind = event_kind_from_name(type);
    e.event_type = b.strings.intern(type);
    e.mem_kind = memory_type_from_name(mtype);
    e.memory_type = b.strings.intern(mtype);
    e.address = addr;
    e.size = size;
    e.device_id = dev;
    e.result = result;
    e.stack_id = stack;
    e.api = b.strings.intern("cudaMalloc");
    b.events.push_back(e);
  }
  void live(uint64_t addr, uint64_t size, int dev = 0, const char* mtype = "device", uint64_t s = 1) {
    Allocation a;
    a.address = addr;
    a.size = size;
    a.device_id = dev;
    a.memory_type = mtype;
    a.seq = s;
    b.allocations.push_back(a);
  }
};

using State = std::map<uint64_t, uint64_t>;  // addr -> size, per device

// Backward replay from the final segments (as the viewer does), then
// forward; returns "" when consistent.
std::string replay(const MemvizPlan& p) {
  std::map<int, State> fin;
  for (auto& s : p.segments) {
    if (fin[s.device].count(s.address)) return "duplicate segment";
    fin[s.device][s.address] = s.size;
  }
  for (size_t d = 0; d < p.device_traces.size(); ++d) {
    const auto& tr = p.device_traces[d];
    State st = fin[static_cast<int>(d)];
    for (size_t i = tr.size(); i-- > 0;) {
      const auto& e = tr[i];
      if (e.action == MemvizAction::kSegmentFree) {
        if (st.count(e.addr)) return "undo segment_free over live segment at " + std::to_string(i);
        st[e.addr] = e.size;
      } else if (e.action == MemvizAction::kSegmentAlloc) {
        if (!st.count(e.addr)) return "undo segment_alloc of unknown segment at " + std::to_string(i);
        st.erase(e.addr);
      } else if (e.action != MemvizAction::kOom && !st.count(e.addr)) {
        return "block op on unknown address at " + std::to_string(i);
      }
    }
    for (size_t i = 0; i < tr.size(); ++i) {
      const auto& e = tr[i];
      if (e.action == MemvizAction::kSegmentAlloc) {
        if (st.count(e.addr)) return "segment_alloc over live at " + std::to_string(i);
        st[e.addr] = e.size;
      } else if (e.action == MemvizAction::kSegmentFree) {
        if (!st.count(e.addr)) return "segment_free unknown at " + std::to_string(i);
        st.erase(e.addr);
      }
    }
    if (st != fin[static_cast<int>(d)]) return "forward replay does not end in the segments";
  }
  for (auto& kv : fin)
    if (kv.first >= static_cast<int>(p.device_traces.size())) return "segments on a device without a trace";
  return "";
}

size_t count(const MemvizPlan& p, MemvizAction a) {
  size_t n = 0;
  for (auto& t : p.device_traces)
    for (auto& e : t) n += e.action == a;
  return n;
}

}  // namespace

TEST(Memviz, SimpleAllocFree) {
  B x;
  x.ev("allocation", 0x1000, 100);
  x.ev("allocation", 0x2000, 200);
  x.ev("deallocation", 0x1000, 100);
  x.ev("oom", 0, 1 << 20);
  x.live(0x2000, 200);
  x.b.metadata.device_free_bytes = 4096;
  MemvizPlan p = build_memviz_plan(x.b);
  EXPECT_EQ(replay(p), "");
  ASSERT_EQ(p.segments.size(), 1u);
  EXPECT_EQ(p.segments[0].address, 0x2000u);
  EXPECT_EQ(count(p, MemvizAction::kSegmentAlloc), 2u);
  EXPECT_EQ(count(p, MemvizAction::kAlloc), 2u);
  EXPECT_EQ(count(p, MemvizAction::kFreeRequested), 1u);
  EXPECT_EQ(count(p, MemvizAction::kFreeCompleted), 1u);
  EXPECT_EQ(count(p, MemvizAction::kSegmentFree), 1u);
  ASSERT_EQ(count(p, MemvizAction::kOom), 1u);
  EXPECT_EQ(p.device_traces[0].back().device_free, 4096u);
  EXPECT_EQ(p.device_traces[0].back().size, 1u << 20);
}

TEST(Memviz, AllocationsOlderThanTheRing) {
  B x;
  x.live(0x9000, 50, 1);  // never in the ring, still live: a segment, no trace entry
  x.ev("allocation", 0x1000, 100);
  x.ev("deallocation", 0x5000, 70);  // allocated before the ring, freed in it
  x.ev("deallocation", 0x6000, 0);   // unknown and size unknown: skipped
  x.live(0x1000, 100);
  MemvizPlan p = build_memviz_plan(x.b);
  EXPECT_EQ(replay(p), "");
  EXPECT_EQ(p.segments.size(), 2u);
  EXPECT_EQ(p.pre_existing_segments, 1u);
  EXPECT_EQ(p.pre_existing_frees, 1u);
  EXPECT_EQ(p.skipped_frees, 1u);
  ASSERT_EQ(p.device_traces.size(), 2u);  // device 1 listed because it has a segment
}

TEST(Memviz, AddressReuseAndMissedFree) {
  B x;
  x.ev("allocation", 0x1000, 100);
  x.ev("deallocation", 0x1000, 100);
  x.ev("allocation", 0x1000, 300);
  x.ev("allocation", 0x1000, 400);  // the free of the 300 was missed
  x.live(0x1000, 400);
  MemvizPlan p = build_memviz_plan(x.b);
  EXPECT_EQ(replay(p), "");
  ASSERT_EQ(p.segments.size(), 1u);
  EXPECT_EQ(p.segments[0].size, 400u);
  EXPECT_EQ(p.synthetic_entries, 3u);
}

TEST(Memviz, LiveButLeftFreeByTheTrace) {
  B x;
  x.ev("allocation", 0x1000, 100);
  x.ev("deallocation", 0x1000, 100);
  x.live(0x1000, 100);  // inconsistent input: repaired with an alloc at the end
  MemvizPlan p = build_memviz_plan(x.b);
  EXPECT_EQ(replay(p), "");
  EXPECT_EQ(p.segments.size(), 1u);
  EXPECT_EQ(p.synthetic_entries, 2u);
}

TEST(Memviz, VmmHandlesGetNonOverlappingAddresses) {
  B x;
  x.ev("allocation", 1, 4 << 20, 0, "physical");
  x.ev("allocation", 2, 2 << 20, 0, "physical");
  x.ev("map", 0x7f0000000000, 4 << 20, 0, "mapping");
  x.ev("allocation", 0x7f0000000000, 1 << 20, 0, "device");
  x.ev("deallocation", 2, 0, 0, "physical");
  x.live(1, 4 << 20, 0, "physical");
  x.live(0x7f0000000000, 1 << 20);
  x.live(0x7f0000000000, 4 << 20, 0, "mapping");  // mappings are not segments
  MemvizPlan p = build_memviz_plan(x.b);
  EXPECT_EQ(replay(p), "");
  ASSERT_EQ(p.segments.size(), 2u);
  for (size_t i = 1; i < p.segments.size(); ++i)
    EXPECT_LE(p.segments[i - 1].address + p.segments[i - 1].size, p.segments[i].address);
  for (auto& s : p.segments)
    if (s.size == (4u << 20)) {
      EXPECT_GE(s.address, 1ull << 52);
    }
}

TEST(Memviz, FailedCallsAndUnknownDevice) {
  B x;
  x.ev("allocation", 0x1000, 100, -1);
  x.ev("allocation_failed", 0, 100, 0, "device", 1);
  x.ev("allocation", 0, 100, 0, "device", 2);  // failed: not a segment
  x.live(0x1000, 100, -1);
  MemvizPlan p = build_memviz_plan(x.b);
  EXPECT_EQ(replay(p), "");
  ASSERT_EQ(p.segments.size(), 1u);
  EXPECT_EQ(p.segments[0].device, 0);
}

TEST(Memviz, PickleStartsWithProto2AndEndsWithStop) {
  B x;
  x.ev("allocation", 0x1000, 100, 0, "device", 0, 7);
  x.live(0x1000, 100, 0, "device");
  Stack s;
  s.stack_id = 7;
  Frame f;
  f.kind = FrameKind::kNative;
  f.module = "/lib/libx.so";
  f.offset = 0x42;
  s.frames.push_back(f);
  x.b.stacks.push_back(s);
  x.b.stack_index[7] = 0;
  MemvizPlan p = build_memviz_plan(x.b);
  std::string out;
  PickleWriter w([](void* c, const uint8_t* d, size_t n) {
    static_cast<std::string*>(c)->append(reinterpret_cast<const char*>(d), n);
    return true;
  }, &out);
  ASSERT_TRUE(write_memviz_pickle(x.b, p, w));
  ASSERT_GT(out.size(), 4u);
  EXPECT_EQ(static_cast<uint8_t>(out[0]), 0x80);
  EXPECT_EQ(out[1], 2);
  EXPECT_EQ(out.back(), '.');
  EXPECT_NE(out.find("libx.so+0x42"), std::string::npos);
  EXPECT_NE(out.find("segment_alloc"), std::string::npos);
  EXPECT_NE(out.find("device_traces"), std::string::npos);
}

namespace {

Frame frame(FrameKind kind, const char* function, const char* module = "") {
  Frame f;
  f.kind = kind;
  f.function = function;
  f.module = module;
  f.file = kind == FrameKind::kPython ? "/home/u/train.py" : "";
  return f;
}

std::string names(const std::vector<const Frame*>& frames) {
  std::string s;
  for (const Frame* f : frames) s += (s.empty() ? "" : " ") + f->function;
  return s;
}

// A stack as older bundles wrote it: Python frames first.
Stack python_first_stack() {
  Stack s;
  s.stack_id = 9;
  s.python = "captured";
  s.frames = {frame(FrameKind::kPython, "alloc_step"), frame(FrameKind::kPython, "<module>"),
              frame(FrameKind::kNative, "cudaMalloc", "/lib/libcudart.so"),
              frame(FrameKind::kNative, "ffi_call", "/lib/libffi.so.8"),
              frame(FrameKind::kNative, "_PyEval_EvalFrameDefault", "/usr/bin/python3.12"),
              frame(FrameKind::kNative, "Py_RunMain", "/usr/bin/python3.12")};
  return s;
}

}  // namespace

// PyTorch's snapshots keep native frames innermost and put the Python frames
// at the interpreter's loop (torch/csrc/profiler/combined_traceback.cpp).
TEST(Memviz, FramesInterleavedAtTheEvalLoop) {
  Stack s = python_first_stack();
  EXPECT_EQ(names(ordered_frames(s)), "cudaMalloc ffi_call alloc_step <module> _PyEval_EvalFrameDefault Py_RunMain");
  // A bundle written in the merged order reads the same (idempotent).
  Stack merged = s;
  merged.frames.clear();
  for (const Frame* f : ordered_frames(s)) merged.frames.push_back(*f);
  EXPECT_EQ(names(ordered_frames(merged)), names(ordered_frames(s)));
  // Native-only and Python-only stacks keep their order.
  Stack native_only;
  native_only.frames = {frame(FrameKind::kNative, "a"), frame(FrameKind::kNative, "b")};
  EXPECT_EQ(names(ordered_frames(native_only)), "a b");
  Stack python_only;
  python_only.frames = {frame(FrameKind::kPython, "f"), frame(FrameKind::kPython, "g")};
  EXPECT_EQ(names(ordered_frames(python_only)), "f g");
  // The one-line site of a stack: common/site_rules.h (unit_site_rules.cpp).
}

TEST(Memviz, PickleListsFramesInMergedOrder) {
  B x;
  x.ev("allocation", 0x1000, 100, 0, "device", 0, 9);
  x.live(0x1000, 100, 0, "device", 100);
  x.b.stacks.push_back(python_first_stack());
  x.b.stack_index[9] = 0;
  MemvizPlan p = build_memviz_plan(x.b);
  std::string out;
  PickleWriter w([](void* c, const uint8_t* d, size_t n) {
    static_cast<std::string*>(c)->append(reinterpret_cast<const char*>(d), n);
    return true;
  }, &out);
  ASSERT_TRUE(write_memviz_pickle(x.b, p, w));
  // The first occurrence of each name is in the first frame list written
  // (the segment's), in list order.
  size_t cuda = out.find("cudaMalloc"), ffi = out.find("ffi_call"), step = out.find("alloc_step"),
         mod = out.find("<module>"), loop = out.find("_PyEval_EvalFrameDefault"), main = out.find("Py_RunMain");
  ASSERT_NE(main, std::string::npos);
  EXPECT_LT(cuda, ffi);
  EXPECT_LT(ffi, step);
  EXPECT_LT(step, mod);
  EXPECT_LT(mod, loop);
  EXPECT_LT(loop, main);
}
