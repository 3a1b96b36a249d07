// Bundle -> Trace Event Format JSON (Perfetto, chrome://tracing).
#pragma once

#include "common/bundle_model.h"
#include "tools/output_file.h"

namespace gpumemrec::cli {

// Counter events ("C") "live bytes device N" for every change of
// memory_allocated, instant events ("i") for allocations, frees, OOMs and
// failures with their details in args, and process/thread name metadata.
// Timestamps are microseconds since the first event (otherData.t0_unix).
void write_chrome_trace(const model::Bundle& b, OutputFile& out);

}  // namespace gpumemrec::cli
