// events.json and allocations.json: straight from the snapshot.
#include "shim/base/hook_table.h"
#include "shim/dump/bundle_files.h"
#include "shim/dump/event_json.h"

namespace gpumemrec {

bool write_events_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  OutFile file(files, "events.json");
  if (file.ok()) {
    FdOut& out = file.out();
    out.write("[");
    bool first = true;
    for (const Event& e : c.snap.events) {
      write_event_json(out, e, first);
      first = false;
    }
    out.write("]");
  }
  return file.finish(error);
}

namespace {

void write_live(JsonWriter& w, const LiveEntry& a) {
  w.StartObject();
  w.Key("address"); w.Uint64(a.key);
  w.Key("size"); w.Uint64(a.size);
  w.Key("device_id"); w.Int(a.device);
  w.Key("api"); w.String(hook_name(a.api));
  w.Key("memory_type"); w.String(memory_type_name(MemoryType(a.memory_type)));
  w.Key("timestamp"); w.Double(seconds(a.time_ns));
  w.Key("thread_id"); w.Uint(a.tid);
  w.Key("stack_id"); w.Uint(a.stack_id);
  w.Key("seq"); w.Uint64(a.seq);
  w.EndObject();
}

}  // namespace

bool write_allocations_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  OutFile file(files, "allocations.json");
  if (file.ok()) {
    JsonWriter w(file.out());
    w.StartArray();
    for (const LiveEntry& a : c.snap.live) write_live(w, a);
    w.EndArray();
  }
  return file.finish(error);
}

}  // namespace gpumemrec
