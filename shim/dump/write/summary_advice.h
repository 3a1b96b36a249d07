// summary.txt's "Memory by role" (when the framework's digest has roles)
// and "What to try" (common/advice.h), from what the writer holds: the
// bundle model (card accounting), the framework's report and
// GPUMEMREC_LIMIT. summary.txt is written again with the verdict, and the
// framework's report arrives with it at the latest, so the rewritten file
// has the framework's evidence too.
#pragma once

#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

void write_summary_advice(FdOut& o, const BundleContent& c);

}  // namespace gpumemrec
