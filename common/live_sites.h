// The top allocation sites: live allocations grouped by the user's line
// that asked, largest first. One computation for summary.txt (the shim,
// from the bundle it builds in memory) and `gpumemrec report` / `html`
// (the tools, from a bundle read back).
#pragma once
#include <cstdint>
#include <vector>

#include "common/bundle_model.h"

namespace gpumemrec::model {

struct LiveSite {
  uint64_t stack_id = 0;  // the site's largest stack: the one shown
  uint64_t bytes = 0;
  uint64_t count = 0;
  std::vector<uint64_t> stack_ids;  // every stack of the site, largest first (live_sites only)
};

// Allocations grouped by stack_id; ordered by bytes (largest first), then
// stack_id. "mapping" ranges are left out (the handle holds the memory).
std::vector<LiveSite> live_stacks(const Bundle& b);

// The same stacks grouped into sites: stacks with the same owning library,
// the same site frame and the same callers of it (the Python frames outside
// the site and, for a native site, its own module's frames; site_rules.h)
// are one site,
// whatever path the framework took below the user's line and whatever
// native frames the interpreter used. PyTorch's expandable segments reach
// cuMemCreate by three paths from one tensor allocation (seen on an H200,
// docs/validation/2026-11-26): one line of the user's, listed once. A
// helper of the user's called from two places stays two sites. A stack
// without frames is a site of its own.
std::vector<LiveSite> live_sites(const Bundle& b);

// What makes stacks one site (above): equal keys, one site. `s` may be null
// (a stack without frames, or not known), then the key is the stack id's.
// The status region groups its stacks with it too (shim/dump/status/).
std::string live_site_key(const Stack* s, uint64_t stack_id);

}  // namespace gpumemrec::model
