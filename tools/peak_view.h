// The peak (peak.json, common/peak_json.h) for report, html and query: per
// device the high-water mark, when, whether exact (and why not), the sites
// live at that moment beside what is live now; for an exit bundle with the
// framework's exit digest, PyTorch's own peaks beside ours.
#pragma once
#include <string>

#include "tools/json_out.h"
#include "tools/role_view.h"

namespace gpumemrec::cli {

std::string peak_text(const model::Bundle& b, const BundleInsight& in, size_t top);
// "peak": null when the bundle has no peak.json and no framework peaks.
void json_peak(JsonWriter& w, const model::Bundle& b, const BundleInsight& in, size_t top);

}  // namespace gpumemrec::cli
