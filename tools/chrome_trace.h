// Bundle -> Trace Event Format JSON (Perfetto, chrome://tracing).
#pragma once

#include "common/bundle_model.h"
#include "tools/output_file.h"

namespace gpumemrec::cli {

// Trace Event Format (docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
//  - every recorded call is a complete event ("X") on its thread, from
//    `timestamp - duration_ns` (the call began) for `duration_ns`, with the
//    event's details in args (and `site`, its stack's site frame:
//    common/site_rules.h);
//  - an out-of-memory result is also a process-wide instant ("I", s "p");
//  - counters ("C") "live bytes device N", one track per device, sampled at
//    every change of memory_allocated;
//  - process and thread names ("M").
// Timestamps are microseconds since t0 (otherData.t0_unix), 1 µs before the
// earliest instant of the trace: none is negative, and none is 0, which
// Chrome DevTools' trace engine reads as "no time" and leaves out of the
// bounds. That engine takes the bounds from B/E/X/I events only
// (models/trace/handlers/MetaHandler.js), which is why calls are "X" and
// instants capital "I" (the lowercase "i" of the format is not counted).
void write_chrome_trace(const model::Bundle& b, OutputFile& out);

}  // namespace gpumemrec::cli
