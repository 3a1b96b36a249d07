// The verdict in words, one copy for metadata.json, summary.txt and the
// stderr line (docs/bundle-format.md, "Out-of-memory verdicts").
#pragma once
#include <cstdint>
#include <string>

#include "shim/dump/verdict/episodes.h"

namespace gpumemrec {

// "recovered after freeing 3.20 GiB of cache (12.3 ms later)", or with a
// handler "recovered: accelerate find_executable_batch_size caught the error
// and retries with less (4.1 ms later)"
std::string recovery_phrase(const Recovery& r);
// The sentence of metadata.json's outcome_detail.
std::string outcome_detail(const Verdict& v, uint64_t episode_ms);

}  // namespace gpumemrec
