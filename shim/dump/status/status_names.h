// Names for the status region's sites, in the terms of `gpumemrec report`:
// each stack made into the tools' model (query/stack_model.h), its site
// frame and owning library found by the bundle's own rules
// (common/site_rules.h, with this process's GPUMEMREC_SITE_SKIP), its label
// the report's (common/names.h, frame_label), and stacks grouped into sites
// by the report's key (common/live_sites.h, live_site_key).
//
// Only while someone watches (`top` writes a deadline into the region) and
// only stacks not named before: a stack never changes, so its name is kept
// (until a library is unloaded: then its addresses may mean something
// else, and every name goes). What differs from a bundle's symbolization is
// cost only: a native frame in a module the site rules class as runtime,
// framework, system or glue is named by its module and offset, without
// reading that module's symbol table (libtorch_cuda.so's alone is hundreds
// of MiB): no rule looks at such a frame's function, except when every
// frame of a stack is skipped and such a frame is the site, and then the
// stack is named again with every frame symbolized.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/site_rules.h"
#include "shim/dump/query/symbolizer.h"
#include "shim/dump/status/status_figures.h"

namespace gpumemrec {

struct SiteFigure {
  uint64_t bytes = 0, count = 0, stack_id = 0;
  uint32_t stacks = 0;
  bool named = false;
  std::string label, library;
};

class SiteNamer {
 public:
  explicit SiteNamer(std::vector<std::string> skip_patterns) : rules_(std::move(skip_patterns)) {}
  // Names up to `max_new` stacks of `stacks` not named yet, largest first,
  // and stops once `budget_ns` of this thread's CPU time is spent (after
  // one stack at least). True when every stack of `stacks` has a name.
  bool name(Recorder* r, const std::vector<StackFigure>& stacks, size_t max_new, uint64_t budget_ns);
  // `stacks` (largest first) as sites, largest first: named stacks with
  // equal keys are one site; a stack without a name is a site of its own.
  void group(const std::vector<StackFigure>& stacks, std::vector<SiteFigure>* out) const;
  bool named(uint32_t stack_id) const { return names_.count(stack_id) != 0; }
  size_t cached() const { return names_.size(); }

  // Names kept at most: past it they all go and are made again as needed.
  static constexpr size_t kMaxNames = 4096;

 private:
  struct Named {
    std::string key, label, library;
  };
  void follow_loader();
  Named name_one(Recorder* r, uint32_t stack_id);

  site::Rules rules_;
  Symbolizer sym_;
  bool begun_ = false;
  uint64_t adds_ = 0, subs_ = 0;
  std::unordered_map<uint32_t, Named> names_;
};

}  // namespace gpumemrec
