// peak.json: each device's high-water mark of recorded bytes and the sites
// live then (shim/dump/capture/peak_finish.h; docs/bundle-format.md).
#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

namespace {

void write_device(JsonWriter& w, const PeakDevice& d) {
  w.StartObject();
  w.Key(key::kDevice); w.Int(d.device);
  w.Key(key::kPeakBytes); w.Uint64(d.peak_bytes);
  w.Key(key::kPeakTimeNs); w.Uint64(d.peak_time_ns);
  w.Key(key::kPeakSeq); w.Uint64(d.peak_seq);
  w.Key(key::kExact); w.Bool(d.exact);
  w.Key(key::kWhyInexact);
  d.exact ? w.Null() : w.String(d.why_inexact);
  w.Key(key::kLiveNowBytes); w.Uint64(d.live_now_bytes);
  w.Key(key::kEventsReplayed); w.Uint64(d.events_replayed);
  w.Key(key::kSites);
  w.StartArray();
  for (const PeakSite& s : d.sites) {
    w.StartObject();
    w.Key(key::kStackId); w.Uint64(s.stack_id);
    w.Key(key::kBytes); w.Uint64(s.bytes);
    w.Key(key::kCount); w.Uint64(s.count);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace

bool write_peak_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  if (!c.peak || !c.peak->present) return true;
  OutFile file(files, file::kPeak);
  if (file.ok()) {
    JsonWriter w(file.out());
    w.StartObject();
    w.Key(key::kSchema); w.Int(1);
    w.Key(key::kDevices);
    w.StartArray();
    for (const PeakDevice& d : c.peak->devices) write_device(w, d);
    w.EndArray();
    w.EndObject();
  }
  return file.finish(error);
}

}  // namespace gpumemrec
