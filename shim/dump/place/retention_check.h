// Start-up check: can one bundle of the configured ring fit under
// GPUMEMREC_MAX_TOTAL_MB? A bundle bigger than the cap on its own is kept
// when it is written (the newest evidence; bundle_dir.h, bundles_to_prune)
// and removed by the next dump's prune, so a ring that cannot fit is said
// once at start-up, with the numbers and what to change.
#pragma once
#include <cstdint>
#include <string>

#include "common/bundle_schema.h"
#include "common/config.h"

namespace gpumemrec {

// The figures per file are the schema's (common/bundle_schema.h, "What a
// bundle takes on disk").
// With GPUMEMREC_COMPRESS=zstd a bundle is taken to be this many times
// smaller (retention_check.cpp says why).
constexpr uint64_t kZstdAssumedRatio = 8;

// The largest ring whose estimated bundle fits `max_total_mb` MiB (0: none
// does; UINT64_MAX: no cap).
uint64_t largest_fitting_ring(uint64_t max_total_mb);

// The warning for `cfg` ("" when a full ring fits, or MAX_TOTAL_MB is 0).
std::string retention_warning(const Config& cfg);

// Says retention_warning(cfg) on stderr, once per process; called from
// dumper_init.
void warn_if_bundle_exceeds_retention(const Config& cfg);

}  // namespace gpumemrec
