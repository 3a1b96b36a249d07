// manifest.json, written last: it lists every file of the bundle.
#include <unistd.h>

#include <ctime>

#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

namespace {

const char* const kGenerator = "gpumemrec 0.1.0";

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
  listed.push_back("manifest.json");
  OutFile file(files, "manifest.json");
  if (file.ok()) {
    JsonWriter w(file.out());
    w.StartObject();
    w.Key("schema_version"); w.Int(1);
    w.Key("bundle_name"); w.String(c.in.bundle_name);
    w.Key("created_at_utc"); w.String(iso_utc(c.in.created_ns));
    w.Key("reason"); w.String(dump_reason_name(c.in.reason));
    w.Key("backend"); w.String(backend_name(c.in.backend));
    if (has_verdict(c.in)) {
      w.Key("outcome"); w.String(outcome_name(c.in.verdict.outcome));
    }
    w.Key("event_count"); w.Uint64(c.snap.event_count);
    w.Key("files");
    w.StartArray();
    for (auto& name : listed) w.String(name);
    w.EndArray();
    w.Key("generator"); w.String(kGenerator);
    w.Key("pid"); w.Int(getpid());
    w.EndObject();
  }
  return file.finish(error);
}

}  // namespace gpumemrec
