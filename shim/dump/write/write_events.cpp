// events.json, streamed from the frozen events, and allocations.json, from
// the model.
#include "shim/base/hook_table.h"
#include "shim/dump/write/bundle_files.h"
#include "shim/dump/write/event_json.h"
#include "shim/dump/write/launcher_env.h"

#include <unistd.h>

namespace gpumemrec {

namespace {

// What every event of this dump shares: device totals from the dump-time
// query, the device's free bytes for the failing event, pid and launcher
// identity (docs/bundle-format.md, events.json).
void make_event_json_context(const BundleInput& in, EventJsonContext* ctx) {
  for (const auto& d : in.devices.devices)
    if (d.device_id >= 0 && d.device_id < EventJsonContext::kDevices) ctx->device_total[d.device_id] = d.total_bytes;
  const FailureInfo* f = in.failure;
  if (f && f->device >= 0 && f->device < EventJsonContext::kDevices && in.devices.has_mem_info) {
    ctx->device_total[f->device] = in.devices.total_bytes;
    ctx->failure_seq = f->seq;
    ctx->has_failure_free = true;
    ctx->failure_free = in.devices.free_bytes;
  }
  ctx->set_identity(getpid(), launcher_identity_from_environ());
}

}  // namespace

bool write_events_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  OutFile file(files, file::kEvents, true);
  if (file.ok()) {
    EventJsonContext ctx;
    make_event_json_context(c.in, &ctx);
    FdOut& out = file.out();
    out.write("[");
    bool first = true;
    for (const Event& e : c.events) {
      write_event_json(out, e, first, ctx);
      first = false;
    }
    out.write("]");
  }
  return file.finish(error);
}

bool write_allocations_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  OutFile file(files, file::kAllocations, true);
  if (file.ok()) {
    FdOut& out = file.out();
    char buf[kMaxLiveJson];
    out.write("[");
    bool first = true;
    for (const model::Allocation& a : c.model.allocations) {
      out.write(buf, format_live_json(buf, a, first));
      first = false;
    }
    out.write("]");
  }
  return file.finish(error);
}

}  // namespace gpumemrec
