// Writing the files of one bundle (docs/bundle-format.md is the contract).
// The caller (dumper.cpp) owns the directory, the temporary name and the
// rename; this file only turns the recorder's state into files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "shim/dump/device_query.h"
#include "shim/dump/dumper.h"
#include "shim/dump/gpu_processes.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

class Symbolizer;

struct BundleInput {
  Recorder* recorder = nullptr;
  DumpReason reason;
  const FailureInfo* failure = nullptr;  // null for signal / exit dumps
  Backend backend = Backend::kCuda;
  std::string bundle_name;
  uint64_t created_ns = 0;
  DeviceReport devices;
  GpuProcessReport gpu_processes;  // NVML's view of the failing device
};

struct WriteBuffer {
  char* data = nullptr;
  size_t size = 0;
};

// Writes every file into the directory `dirfd`. On failure returns false and
// sets *error; *files lists what was created (for clean-up either way).
bool write_bundle_files(int dirfd, const BundleInput& in, Symbolizer& symbolizer, WriteBuffer buf,
                        std::vector<std::string>* files, std::string* error);

}  // namespace gpumemrec
