// The framework's own view (docs/python-hook.md): framework.json (the
// hook's digest), the framework's state file, the "framework" object of
// metadata.json and its lines in summary.txt.
#include <cstdio>

#include "common/format.h"
#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

namespace {

bool write_bytes(BundleFiles& files, const char* name, const std::string& bytes, std::string* error) {
  OutFile file(files, name);
  if (file.ok()) file.out().write(bytes.data(), bytes.size());
  return file.finish(error);
}

bool listed(const BundleFiles& files, const char* name) {
  for (const auto& n : files.names)
    if (n == name) return true;
  return false;
}

}  // namespace

bool write_framework_files(BundleFiles& files, const BundleContent& c, std::string* error) {
  const FrameworkReport* f = c.in.framework.get();
  if (!f || listed(files, file::kFramework)) return true;
  // New files even when the verdict's files are written again: the report
  // came with the verdict, after the bundle was written.
  const bool rewrite = files.rewrite;
  files.rewrite = false;
  bool ok = write_bytes(files, file::kFramework, f->digest, error);
  if (ok && !f->state.empty()) ok = write_bytes(files, f->state_name.c_str(), f->state, error);
  files.rewrite = rewrite;
  return ok;
}

void write_framework_metadata(JsonWriter& w, const BundleInput& in) {
  const FrameworkDigest* f = in.framework ? &in.framework->fields : nullptr;
  w.Key(key::kFramework);
  if (!f) {
    w.Null();
    return;
  }
  w.StartObject();
  w.Key(key::kName); w.String(f->framework);
  w.Key(key::kDevice); w.Int64(f->device);
  w.Key(key::kRequestBytes); w.Uint64(f->request_bytes);
  w.Key(key::kDeviceTotal); w.Uint64(f->device_total);
  w.Key(key::kDeviceFree); w.Uint64(f->device_free);
  w.Key(key::kReservedBytes); w.Uint64(f->reserved_bytes);
  w.Key(key::kAllocatedBytes); w.Uint64(f->allocated_bytes);
  w.Key(key::kLargestFreeBlock); w.Uint64(f->largest_free_block);
  w.Key(key::kMostlyFreeSegmentCount); w.Uint64(f->mostly_free_count);
  w.Key(key::kMostlyFreeBytes); w.Uint64(f->mostly_free_bytes);
  w.Key(key::kError); w.String(f->error);
  w.Key(key::kStateFile);
  in.framework->state.empty() ? w.Null() : w.String(in.framework->state_name);
  w.EndObject();
}

void write_framework_summary(FdOut& o, const BundleInput& in) {
  if (!in.framework || !has_verdict(in)) return;  // an exit digest names no failure
  const FrameworkDigest* f = &in.framework->fields;
  char line[1024];
  if (f->framework == "torch") {
    std::snprintf(line, sizeof line,
                  "PyTorch:      asked %s on device %d; reserved %s, allocated %s (%s cached, free); largest free "
                  "block %s\n",
                  format_bytes(f->request_bytes).c_str(), int(f->device), format_bytes(f->reserved_bytes).c_str(),
                  format_bytes(f->allocated_bytes).c_str(),
                  format_bytes(f->reserved_bytes > f->allocated_bytes ? f->reserved_bytes - f->allocated_bytes : 0)
                      .c_str(),
                  format_bytes(f->largest_free_block).c_str());
    o.write(line);
    if (f->mostly_free_count) {
      std::snprintf(line, sizeof line,
                    "              %llu segment(s) mostly free cache (under half allocated), %s free in them: "
                    "fragmentation (framework.json lists them)\n",
                    (unsigned long long)f->mostly_free_count, format_bytes(f->mostly_free_bytes).c_str());
      o.write(line);
    }
  } else {
    std::snprintf(line, sizeof line, "%s:%*s%s\n", f->framework.c_str(),
                  int(f->framework.size() < 13 ? 13 - f->framework.size() : 1), "", f->error.c_str());
    o.write(line);
    if (!in.framework->state.empty()) {
      std::snprintf(line, sizeof line, "              its live buffers: %s (gpumemrec report lists them)\n",
                    in.framework->state_name.c_str());
      o.write(line);
    }
  }
}

}  // namespace gpumemrec
