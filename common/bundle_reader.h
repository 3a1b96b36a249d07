// Loads a bundle directory (docs/bundle-format.md) into the tools' model
// (common/bundle_model.h); every key and file name from the schema
// (common/bundle_schema.h).
// Never throws for bad input: every failure is reported as one ReadError
// naming the file and what is wrong with it.
#pragma once

#include <functional>
#include <string>

#include "common/bundle_model.h"
#include "common/bundle_schema.h"

namespace gpumemrec::model {

struct ReadError {
  std::string file;  // the file (or directory) at fault
  std::string what;  // one line, no trailing newline
  std::string message() const { return file + ": " + what; }
};

struct ReadOptions {
  bool events = true;
  bool allocations = true;
  bool stacks = true;
  bool environment = true;
  // Parse a big events.json on two threads (0 = when it pays off, 1 = never).
  int threads = 0;
  // Called now and then while loading large files: stage name and a
  // fraction in [0,1]. Optional.
  std::function<void(const char* stage, double fraction)> progress;
};

// True when `dir` is a directory holding a manifest.json.
bool is_bundle_dir(const std::string& dir);

// Reads the bundle in `dir`. On failure returns false and fills *err.
bool read_bundle(const std::string& dir, const ReadOptions& opts, Bundle* out, ReadError* err);

}  // namespace gpumemrec::model
