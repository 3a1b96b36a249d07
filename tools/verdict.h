// The out-of-memory verdict of a bundle (manifest/metadata
// `outcome`, `outcome_detail`, `recovery`, `recovered_failures`; see
// docs/bundle-format.md, "Out-of-memory verdicts") as ls, report, html and
// query show it. Bundles without a verdict (signal/exit dumps, bundles
// written before verdicts existed) show "-" and no recovery lines.
#pragma once

#include <string>

#include "common/bundle_model.h"
#include "tools/json_out.h"

namespace gpumemrec::cli {

// The bundle's outcome, "-" when it has none (the ls column).
std::string outcome_cell(const model::Bundle& b);

// Report (text) lines, each ending in '\n'; "" when there is nothing to say.
//   "  outcome: fatal - not recovered: the program exited"
std::string outcome_line(const model::Bundle& b);
//   "  recovered: cudaMalloc(8.00 GiB) on thread 4243 succeeded 12.3 ms after the failure; 3.20 GiB freed before it"
std::string recovery_line(const model::Bundle& b);
// The section "RECOVERED OUT-OF-MEMORY FAILURES" with the line
// "Recovered out-of-memory failures since the previous bundle: N" and a table
// of the listed ones (at most max_rows), when N > 0.
std::string recovered_failures_text(const model::Bundle& b, size_t max_rows, bool verbose);

// report --json keys: outcome, outcome_detail, recovery, recovered_failures.
void json_verdict(JsonWriter& w, const model::Bundle& b);

}  // namespace gpumemrec::cli
