// `gpumemrec top --once --json`: one snapshot as JSON (schema
// "gpumemrec.top/1", docs/cli.md lists the keys; new keys may be added,
// none renamed or removed without a new schema).
#pragma once
#include <string>
#include <vector>

#include "tools/top_view.h"

namespace gpumemrec::cli {

struct TopJsonInput {
  const TopSnapshot* snapshot = nullptr;
  const std::vector<TopRow>* rows = nullptr;
  std::string dir;
  std::string cards_problem;
  size_t top_sites = 16;
};

void print_top_json(const TopJsonInput& in);

}  // namespace gpumemrec::cli
