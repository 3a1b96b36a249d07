// events.json is most of a big bundle (a 1,000,000-event ring is ~350 MB),
// so its records are formatted by hand: constant keys copied as byte
// strings, integers by a digit loop, the timestamp as exact seconds with
// microseconds (from the nanosecond clock; no floating-point formatting).
// Every string value is one of our own ASCII names: nothing needs escaping.
// The key order and meaning are those of docs/bundle-format.md.
#pragma once
#include <cstddef>

#include "common/event.h"
#include "shim/dump/json_out.h"

namespace gpumemrec {

// Upper bound of one formatted event, separator included.
constexpr size_t kMaxEventJson = 640;

// Formats `e` (preceded by ',' unless first) into out; returns the length.
size_t format_event_json(char* out, const Event& e, bool first);

inline void write_event_json(FdOut& o, const Event& e, bool first) {
  char buf[kMaxEventJson];
  o.write(buf, format_event_json(buf, e, first));
}

}  // namespace gpumemrec
