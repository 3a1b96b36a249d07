// manifest.json, written last: it lists every file of the bundle.
#include <unistd.h>

#include <ctime>

#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

namespace {

std::string iso_utc(uint64_t ns) {
  time_t t = time_t(ns / 1000000000ull);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

bool write_manifest_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  std::vector<std::string> listed = files.names;
  listed.push_back(file::kManifest);
  OutFile file(files, file::kManifest);
  if (file.ok()) {
    JsonWriter w(file.out());
    w.StartObject();
    w.Key(key::kSchemaVersion); w.Int64(kBundleSchemaVersion);
    w.Key(key::kBundleName); w.String(c.in.bundle_name);
    w.Key(key::kCreatedAtUtc); w.String(iso_utc(c.in.created_ns));
    w.Key(key::kReason); w.String(dump_reason_name(c.in.reason));
    w.Key(key::kBackend); w.String(backend_name(c.in.backend));
    if (has_verdict(c.in)) {
      w.Key(key::kOutcome); w.String(c.model.manifest.outcome);
    }
    w.Key(key::kEventCount); w.Uint64(c.model.manifest.event_count);
    w.Key(key::kFiles);
    w.StartArray();
    for (auto& name : listed) w.String(name);
    w.EndArray();
    w.Key(key::kGenerator); w.String(kBundleGenerator);
    w.Key(key::kPid); w.Int(getpid());
    w.EndObject();
  }
  return file.finish(error);
}

}  // namespace gpumemrec
