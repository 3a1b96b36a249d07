// The files of one bundle: each created exclusively (O_EXCL, never through a
// planted symlink), owner-only (0600), streamed through the dump's buffer,
// fsync'ed; and one writer function per file.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "common/bundle_model.h"
#include "common/bundle_schema.h"
#include "shim/dump/capture/dump_snapshot.h"
#include "shim/dump/write/bundle_input.h"
#include "shim/dump/write/json_out.h"
#include "shim/dump/write/zstd_out.h"

namespace gpumemrec {

// The bundle directory being written and the names created in it (for the
// manifest).
struct BundleFiles {
  int dirfd = -1;
  WriteBuffer buf;
  std::vector<std::string> names;
  // Writing a file again (the verdict): each file goes to "<name>.new",
  // renamed over <name> by finish(); `names` is left as it is.
  bool rewrite = false;
  // GPUMEMREC_COMPRESS=zstd: the large files (OutFile's `compressible`) are
  // written as <name>.zst.
  bool compress = false;
};

class OutFile {
 public:
  // `compressible`: written as <name>.zst when files.compress and zstd can
  // be used (zstd_out.h), else as <name> with a warning.
  OutFile(BundleFiles& files, const char* name, bool compressible = false);
  ~OutFile();
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  bool ok() const { return fd_ >= 0; }
  FdOut& out() { return out_; }
  // Drains and fsyncs; false and *error if any byte did not reach the file.
  bool finish(std::string* error);

 private:
  std::unique_ptr<ZstdOut> zstd_;  // before name_: it decides the name
  std::string name_;
  BundleFiles& files_;
  int fd_;
  int open_errno_ = 0;
  FdOut out_;
};

// Everything the files are written from: the model (common/bundle_model.h,
// built by dump_model.h: manifest, metadata with the verdict and the
// recovered failures, allocations, stacks; events too while snapshot.pickle
// is made), the frozen events that events.json streams (64 bytes each, never
// copied into the model's larger events), and what the model has no place
// for (the device and NVML answers, the failing call's module: `in`).
struct BundleContent {
  const BundleInput& in;
  const model::Bundle& model;
  EventSpan events;        // empty once the frozen events are given back (verdict rewrites)
  const char* symbolizer;  // "libdw" / "dladdr"
  const PeakReport* peak = nullptr;  // peak.json (the first write only)
};

bool write_events_json(BundleFiles& files, const BundleContent& c, std::string* error);
bool write_allocations_json(BundleFiles& files, const BundleContent& c, std::string* error);
bool write_stacks_json(BundleFiles& files, const BundleContent& c, std::string* error);
bool write_metadata_json(BundleFiles& files, const BundleContent& c, std::string* error);
bool write_environment_json(BundleFiles& files, const BundleContent& c, std::string* error);
bool write_summary_txt(BundleFiles& files, const BundleContent& c, std::string* error);
bool write_manifest_json(BundleFiles& files, const BundleContent& c, std::string* error);
// peak.json, when the snapshot has one (write_peak.cpp).
bool write_peak_json(BundleFiles& files, const BundleContent& c, std::string* error);
// framework.json and the framework's state file, when the hook gave them
// (write_framework.cpp); written once (a rewrite adds them if missing).
bool write_framework_files(BundleFiles& files, const BundleContent& c, std::string* error);
void write_framework_metadata(JsonWriter& w, const BundleInput& in);  // "framework": {...} or null
void write_framework_summary(FdOut& o, const BundleInput& in);

// Seconds since the epoch as a double (timestamps in JSON).
inline double seconds(uint64_t ns) { return double(ns) / 1e9; }
// The exception as Stormlog/gpumemprof name it: for a driver-level failure
// the API error ("cudaErrorMemoryAllocation", module "cuda_runtime").
const char* failure_error_name(const BundleInput& in);
const char* failure_module(const BundleInput& in);
// "cudaMalloc(1024) on device 0 returned cudaErrorMemoryAllocation ...".
std::string failure_context(const BundleInput& in);

}  // namespace gpumemrec
