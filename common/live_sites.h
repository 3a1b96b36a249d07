// The top allocation sites: live allocations grouped by stack, largest first.
// One computation for summary.txt (the shim, from the bundle it builds in
// memory) and `gpumemrec report` / `html` (the tools, from a bundle read back).
#pragma once
#include <cstdint>
#include <vector>

#include "common/bundle_model.h"

namespace gpumemrec::model {

struct LiveSite {
  uint64_t stack_id = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
};

// allocations grouped by stack_id; ordered by bytes (largest first), then
// stack_id. "mapping" ranges are left out (the handle holds the memory).
std::vector<LiveSite> live_sites(const Bundle& b);

}  // namespace gpumemrec::model
