// events.json is most of a big bundle (a 1,000,000-event ring is ~350 MB),
// so its records are formatted by hand: the schema's keys
// (common/bundle_keys.h) copied with their length known at compile time,
// integers by a digit loop, the timestamp as exact seconds with
// microseconds (from the nanosecond clock; no floating-point formatting).
// Every string value is one of our own ASCII names: nothing needs escaping.
// The key order and meaning are those of docs/bundle-format.md; keys that
// hold the value a reader assumes when they are absent are left out (its
// "Keys left out" table; 534 -> ~350 bytes per event).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/bundle_model.h"
#include "common/event.h"
#include "shim/dump/write/json_out.h"
#include "shim/record/live_table.h"

namespace gpumemrec {

struct LauncherIdentity;

// What every event of one dump shares, computed once per dump
// (docs/bundle-format.md, events.json: the Stormlog/gpumemprof fields).
struct EventJsonContext {
  static constexpr int kDevices = 256;  // Event::device1 - 1 is 0..254
  // Device total bytes by ordinal (dump-time query); 0 = unknown (null).
  uint64_t device_total[kDevices] = {};
  // The failing event (FailureInfo::seq) and the free bytes the driver
  // reported right after it; 0 = none / unknown.
  uint64_t failure_seq = 0;
  bool has_failure_free = false;
  uint64_t failure_free = 0;
  // ,"pid":..[,"rank":..,"local_rank":..,"world_size":..][,"job_id":..]}
  // (the per-dump keys and the closing brace), made by set_identity().
  std::string tail;

  void set_identity(int pid, const LauncherIdentity& id);
};

// Upper bound of the per-event part of one formatted event, separator
// included (the context's tail follows it).
constexpr size_t kMaxEventJson = 900;

// Formats the per-event part of `e` (preceded by ',' unless first) into out;
// returns the length. The record is complete once ctx.tail follows it.
size_t format_event_json(char* out, const Event& e, bool first, const EventJsonContext& ctx);

// allocations.json's records (the model's live allocations), formatted the same way (a live set of 2.1M
// allocations is ~360 MB: through RapidJSON's writer that file took 2.7 s,
// a third of such a dump). Keys in docs/bundle-format.md's order; the
// timestamp as events.json writes it (seconds, six decimals).
constexpr size_t kMaxLiveJson = 400;
size_t format_live_json(char* out, const model::Allocation& a, bool first);

inline void write_event_json(FdOut& o, const Event& e, bool first, const EventJsonContext& ctx) {
  char buf[kMaxEventJson];
  o.write(buf, format_event_json(buf, e, first, ctx));
  o.write(ctx.tail.data(), ctx.tail.size());
}

}  // namespace gpumemrec
