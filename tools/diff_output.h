// How `gpumemrec diff` (and `html --baseline`) present a site comparison:
// text table with stacks, JSON (keys in docs/cli.md), and the rows the HTML
// report embeds.
#pragma once

#include <string>
#include <vector>

#include "tools/json_out.h"
#include "tools/role_view.h"
#include "tools/site_diff.h"

namespace gpumemrec::cli {

struct DiffPrintOptions {
  size_t top = 20;
  size_t frames = 4;
  bool verbose = false;
  bool include_same = false;
};

// Loads OLD or NEW: one bundle, or every bundle of a directory (summed).
// Throws CliError(kBadInput) like the other subcommands.
// `roles`, when given, sums the bundles' memory by role (tools/role_view.h).
void load_side(const std::string& path, diff::SiteTotals* side, RoleTotals* roles = nullptr);

std::string diff_text(const diff::SiteTotals& o, const diff::SiteTotals& n, const std::vector<diff::SiteDelta>& d,
                      const DiffPrintOptions& p);
void write_diff_json(JsonWriter& w, const diff::SiteTotals& o, const diff::SiteTotals& n,
                     const std::vector<diff::SiteDelta>& d, const DiffPrintOptions& p,
                     const RoleTotals* old_roles = nullptr, const RoleTotals* new_roles = nullptr);

}  // namespace gpumemrec::cli
