// A minimal reader of pprof profiles (google/pprof proto/profile.proto), as
// jax.profiler.device_memory_profile() writes them (gzip-compressed): the
// samples with their values and their stacks. Hostile input is refused with
// a reason, never read past its end.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpumemrec {
namespace pprof {

struct Frame {
  std::string function, file;
  int64_t line = 0;
};

struct Sample {
  std::vector<int64_t> values;  // one per sample type
  std::vector<Frame> frames;    // innermost first
  std::vector<std::pair<std::string, std::string>> labels;  // string labels
};

struct Profile {
  std::vector<std::pair<std::string, std::string>> sample_types;  // (type, unit)
  std::vector<Sample> samples;
  // The index of the ("space", "bytes") value, or the last one.
  size_t bytes_index() const;
  // The index of the value counted in "count" (jaxlib's ("allocations",
  // "count"): how many buffers one sample stands for), or npos.
  size_t count_index() const;
};

// Parses an uncompressed profile.
bool parse(const std::string& bytes, Profile* out, std::string* why);
// Gunzips (at most max_bytes out) then parses.
bool parse_gzip(const std::string& gz, Profile* out, std::string* why, size_t max_bytes = size_t(1) << 30);

}  // namespace pprof
}  // namespace gpumemrec
