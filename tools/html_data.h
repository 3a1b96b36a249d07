// The JSON the HTML report embeds (gpumemrec html): one function per part
// of the page. Never raw events: curves are downsampled (min/max per
// bucket), sites aggregated, tables capped, the flame graph capped.
#pragma once

#include <string>

#include "common/bundle_model.h"
#include "tools/site_diff.h"

namespace gpumemrec::cli {

// baseline: when not null, the page shows a comparison with it
// (`html --baseline OTHER`); baseline_new is the report's own bundle as a
// SiteTotals.
std::string build_html_data(const model::Bundle& b, const diff::SiteTotals* baseline, const diff::SiteTotals* baseline_new);

}  // namespace gpumemrec::cli
