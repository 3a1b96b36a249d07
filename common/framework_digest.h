// framework.json: the digest the Python start-up hook computes from the
// framework's own state at its out-of-memory (docs/python-hook.md,
// docs/bundle-format.md "framework.json"). One reader for the shim (which
// checks it and copies the numbers into metadata.json and summary.txt) and
// the tools (report, html). Every key is optional; a wrong type reads as
// absent.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpumemrec {

struct MostlyFreeSegment {
  uint64_t address = 0, total_size = 0, allocated_size = 0, largest_free_block = 0;
};

struct FrameworkDigest {
  std::string framework;  // "torch", "jax"
  std::string error;      // JAX: the first line of the XlaRuntimeError
  // PyTorch: the program's handler that will catch the error and retry with
  // less (a trainer's batch-size finder); empty when none was found
  std::string retry_handler;
  int64_t device = -1;
  uint64_t request_bytes = 0, device_total = 0, device_free = 0;
  uint64_t reserved_bytes = 0, allocated_bytes = 0, largest_free_block = 0;
  uint64_t segment_count = 0, mostly_free_count = 0, mostly_free_bytes = 0;
  std::vector<MostlyFreeSegment> mostly_free;  // as listed (most free bytes first)
};

// False and *why when the text is not a JSON object naming a framework.
bool parse_framework_digest(const char* json, size_t len, FrameworkDigest* out, std::string* why);

}  // namespace gpumemrec
