// The framework's own view in a bundle (docs/python-hook.md): framework.json
// (PyTorch's reserved vs allocated, largest free block, mostly-free
// segments; JAX's error) and JAX's memory profile
// (framework_memory_profile.pb.gz: live buffers by Python site), for
// `report` and `html`. Read from the bundle directory; a missing or bad file
// leaves the view empty with a reason, never fails the command.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/framework_digest.h"
#include "common/framework_roles.h"
#include "tools/json_out.h"

namespace gpumemrec::cli {

// Live buffers grouped by their creation site (the innermost frame of the
// program's own code: not jax/jaxlib, an installed package or the standard
// library; common/site_rules.h).
struct BufferSite {
  std::string function, file;
  int64_t line = 0;
  uint64_t count = 0, bytes = 0;
};

struct FrameworkView {
  bool present = false;
  FrameworkDigest d;    // framework.json
  FrameworkExtras x;    // its roles, memory fraction, exit peaks (x.problem: what was bad)
  std::string problem;  // why part of the view could not be read
  uint64_t buffer_count = 0, buffer_bytes = 0;
  std::vector<BufferSite> buffer_sites;  // most bytes first
};

FrameworkView read_framework_view(const std::string& bundle_dir);
// The report's text (empty when there is no view).
std::string framework_view_text(const FrameworkView& v, size_t max_rows);
// "framework": {...} or null.
void json_framework_view(JsonWriter& w, const FrameworkView& v, size_t max_rows);

}  // namespace gpumemrec::cli
