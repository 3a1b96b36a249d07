// One recorded stack as the tools' model::Stack (common/bundle_model.h):
// its Python frames from the stack's own words (the code table), its native
// frames as `native` describes them, placed among each other by
// common/frame_order.h, and the Python frames borrowed from a thread
// waiting in backward kept only for a stack that runs in PyTorch. The
// bundle's stacks.json (write/dump_model.cpp, every frame symbolized) and
// the status region's site names (status/status_names.cpp, frames of
// framework and runtime modules named by their module only) are made here.
#pragma once
#include <cstdint>
#include <functional>

#include "common/bundle_model.h"
#include "shim/dump/query/symbolizer.h"

namespace gpumemrec {

struct Recorder;

// A native frame as the symbolizer described it.
model::Frame native_frame(const NativeFrameInfo& ni);

using NativeDescriber = std::function<model::Frame(uint64_t ip)>;

// The stack `id` of the recorder's stack table; a stack without frames
// (python "disabled") when the table does not hold it.
model::Stack stack_model(Recorder* r, uint32_t id, const NativeDescriber& native);

}  // namespace gpumemrec
