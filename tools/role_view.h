// Memory by role and "What to try" for the tools (common/roles.h,
// common/advice.h): read once per bundle with the framework's view and the
// peak, then printed by report (text and --json), html, query and diff.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/advice.h"
#include "common/peak_json.h"
#include "common/roles.h"
#include "tools/framework_view.h"
#include "tools/json_out.h"

namespace gpumemrec::cli {

struct BundleInsight {
  FrameworkView fw;  // framework.json (and JAX's profile)
  model::PeakInfo peak;
  std::vector<model::RoleTable> roles;
  std::vector<model::Advice> advice;
};

// Reads framework.json and peak.json of the bundle's directory.
BundleInsight read_insight(const model::Bundle& b);

// The report's sections (empty strings when there is nothing to say).
std::string roles_text(const BundleInsight& in);
std::string advice_text(const BundleInsight& in);

// "roles": {...}, "advice": [...] (docs/cli.md).
void json_roles(JsonWriter& w, const BundleInsight& in);
void json_advice(JsonWriter& w, const BundleInsight& in);

// Bytes by role summed over bundles, keyed "weights", "library libnccl.so.2",
// "context", ... (the role, then the row's name), for `diff`.
using RoleTotals = std::map<std::string, int64_t>;
void add_role_totals(const model::Bundle& b, RoleTotals* t);
std::string role_diff_text(const RoleTotals& o, const RoleTotals& n);
void json_role_diff(JsonWriter& w, const RoleTotals& o, const RoleTotals& n);

}  // namespace gpumemrec::cli
