// Live bytes per call site in two sets of bundles (OLD, NEW), matched by
// their symbolized frames (common/names.h frame_key: function, file, line, or
// module+offset), never by stack id or address, which differ between runs.
// The answer to "it fit last week": which sites grew, by how much, which are
// new and which are gone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/bundle_model.h"

namespace gpumemrec::diff {

// One side: live allocations of one or more bundles, summed per site.
struct SiteTotals {
  struct Entry {
    std::vector<model::Frame> frames;  // innermost first, as in the bundle
    std::string python;                // the stack's `python` field
    int64_t site_frame = -1;           // the stack's site frame (common/site_rules.h), -1 = none
    std::string library;               // the stack's owning library, "" = unknown
    uint64_t bytes = 0;
    uint64_t count = 0;
  };
  std::vector<std::string> bundles;   // paths added
  std::vector<std::string> outcomes;  // parallel to bundles: Bundle::outcome() ("" = none)
  std::vector<std::string> keys;     // parallel to entries
  std::vector<Entry> entries;
  uint64_t bytes = 0, count = 0;
  void add(const model::Bundle& b);  // call once per bundle
};

// The site frame of a compared site (its stack's, common/site_rules.h), or null.
const model::Frame* site_of(const SiteTotals::Entry& e);

enum class Status { kGrew, kNew, kShrank, kGone, kSame };
const char* status_name(Status s);  // "grew", "new", "shrank", "gone", "same"

struct SiteDelta {
  Status status = Status::kSame;
  uint64_t old_bytes = 0, new_bytes = 0, old_count = 0, new_count = 0;
  int64_t delta() const { return static_cast<int64_t>(new_bytes) - static_cast<int64_t>(old_bytes); }
  const SiteTotals::Entry* site = nullptr;  // NEW's entry, else OLD's
};

// Every site of either side, by change: largest growth first, largest shrink last.
std::vector<SiteDelta> compare(const SiteTotals& old_side, const SiteTotals& new_side);

}  // namespace gpumemrec::diff
