// Bundle -> PyTorch memory snapshot (the dict pytorch.org/memory_viz and
// torch.cuda._memory_viz open). See memory-viz-format.md.
//
// Mapping: every driver-level allocation is a segment holding one block of
// the same size. In the trace, an allocation is segment_alloc + alloc, a free
// is free_requested + free_completed + segment_free, an OOM is an `oom`
// entry with device_free. The plan is built so that replaying the trace
// forward from its implicit initial state ends exactly in the final segments
// (and the viewer's backward replay never meets an unknown address):
//  - live allocations older than the ring are segments with no trace entry;
//  - a free of an address the ring never saw allocated is emitted as a free
//    of a pre-existing segment when its size is known, skipped otherwise;
//  - an allocation over an address the trace still holds (a missed free) is
//    preceded by a synthetic free of the old one;
//  - a live allocation whose address the trace touched but left free gets a
//    synthetic alloc at the end of the trace.
// VMM handles (memory_type "physical") are placed at synthetic addresses so
// their segments never overlap; "mapping" ranges and map/unmap events are
// left out (the handle already accounts for the memory).
// Frames are listed innermost first in PyTorch's order: native frames
// innermost, Python frames at the interpreter's loop (common/frame_order.h).
#pragma once

#include <cstdint>
#include <vector>

#include "common/bundle_model.h"
#include "common/pickle_writer.h"

namespace gpumemrec {

enum class MemvizAction : uint8_t {
  kSegmentAlloc,
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentFree,
  kOom,
};
const char* memviz_action_name(MemvizAction a);

struct MemvizTraceEntry {
  MemvizAction action;
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  uint64_t stack_id = 0;
  int64_t time_us = 0;
  uint64_t device_free = 0;  // oom only
};

struct MemvizSegment {
  int32_t device = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  uint64_t stack_id = 0;
};

struct MemvizPlan {
  std::vector<MemvizSegment> segments;                    // sorted by (device, address)
  std::vector<std::vector<MemvizTraceEntry>> device_traces;  // index = device
  // Diagnostics.
  size_t pre_existing_segments = 0;  // live, allocated before the ring
  size_t pre_existing_frees = 0;     // freed in the ring, allocated before it
  size_t skipped_frees = 0;          // unknown address and unknown size
  size_t synthetic_entries = 0;      // repairs for inconsistent input
};

MemvizPlan build_memviz_plan(const model::Bundle& b);

// Writes the plan as the snapshot dict (PROTO 2 ... STOP). Returns w.ok().
bool write_memviz_pickle(const model::Bundle& b, const MemvizPlan& plan, PickleWriter& w);

}  // namespace gpumemrec
