#include "shim/dump/write/event_json.h"

#include <cstring>

#include "shim/base/hook_table.h"
#include "shim/dump/capture/history.h"
#include "shim/dump/write/launcher_env.h"

namespace gpumemrec {

namespace {

inline char* put(char* p, const char* s, size_t n) {
  std::memcpy(p, s, n);
  return p + n;
}
template <size_t N>
inline char* lit(char* p, const char (&s)[N]) {
  return put(p, s, N - 1);
}
inline char* str(char* p, const char* s) { return put(p, s, std::strlen(s)); }

inline char* u64(char* p, uint64_t v) {
  char tmp[20];
  int n = 0;
  do {
    tmp[n++] = char('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) *p++ = tmp[--n];
  return p;
}

inline char* i64(char* p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return u64(p, uint64_t(0) - uint64_t(v));
  }
  return u64(p, uint64_t(v));
}

// Seconds since the epoch with exactly six decimals (microseconds).
inline char* seconds(char* p, uint64_t ns) {
  p = u64(p, ns / 1000000000ull);
  *p++ = '.';
  uint64_t us = (ns % 1000000000ull) / 1000;
  for (uint64_t d = 100000; d; d /= 10) *p++ = char('0' + (us / d) % 10);
  return p;
}


// JSON string value; the job id comes from the environment and may hold
// anything.
void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c >= 0x7f) {
      // Control bytes and non-ASCII bytes as \u00XX: valid JSON whatever the
      // encoding of the variable (a byte >= 0x80 is kept as its code point).
      static const char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += char(c);
    }
  }
  out += '"';
}

}  // namespace

// Keys whose value is what a reader assumes when they are absent are left
// out (docs/bundle-format.md, "Keys left out"): the launcher identity of a
// process that is rank 0 of 1, a job id that is not set, and the per-event
// metadata object, which is always empty.
void EventJsonContext::set_identity(int pid, const LauncherIdentity& id) {
  char num[24];
  tail.clear();
  tail += ",\"pid\":";
  tail.append(num, size_t(i64(num, pid) - num));
  if (id.rank != 0 || id.local_rank != 0 || id.world_size != 1) {
    tail += ",\"rank\":";
    tail.append(num, size_t(i64(num, id.rank) - num));
    tail += ",\"local_rank\":";
    tail.append(num, size_t(i64(num, id.local_rank) - num));
    tail += ",\"world_size\":";
    tail.append(num, size_t(i64(num, id.world_size) - num));
  }
  if (id.has_job_id) {
    tail += ",\"job_id\":";
    append_json_string(tail, id.job_id);
  }
  tail += '}';
}

size_t format_live_json(char* out, const LiveEntry& a, bool first) {
  char* p = out;
  if (!first) *p++ = ',';
  p = lit(p, "{\"address\":");
  p = u64(p, a.key);
  p = lit(p, ",\"size\":");
  p = u64(p, a.size);
  p = lit(p, ",\"device_id\":");
  p = i64(p, a.device);
  p = lit(p, ",\"api\":\"");
  p = str(p, hook_name(a.api));
  p = lit(p, "\",\"memory_type\":\"");
  p = str(p, memory_type_name(MemoryType(a.memory_type)));
  p = lit(p, "\",\"timestamp\":");
  p = seconds(p, a.time_ns);
  p = lit(p, ",\"thread_id\":");
  p = u64(p, a.tid);
  p = lit(p, ",\"stack_id\":");
  p = u64(p, a.stack_id);
  p = lit(p, ",\"seq\":");
  p = u64(p, a.seq);
  *p++ = '}';
  return size_t(p - out);
}

size_t format_event_json(char* out, const Event& e, bool first, const EventJsonContext& ctx) {
  const char* api = hook_name(e.api);
  const char* backend = backend_name(e.api < kHookCount ? hook_backend(HookId(e.api)) : Backend::kCuda);
  char* p = out;
  if (!first) *p++ = ',';
  p = lit(p, "{\"seq\":");
  p = u64(p, e.seq);
  p = lit(p, ",\"timestamp\":");
  p = seconds(p, e.time_ns);
  p = lit(p, ",\"event_type\":\"");
  p = str(p, event_type_name(event_kind(e)));
  p = lit(p, "\",\"memory_allocated\":");
  p = u64(p, e.live_after);
  p = lit(p, ",\"memory_change\":");
  p = i64(p, event_memory_change(e));
  p = lit(p, ",\"device_id\":");
  p = i64(p, event_device(e));
  p = lit(p, ",\"context\":\"");
  p = str(p, api);
  p = lit(p, "\",\"backend\":\"");
  p = str(p, backend);
  p = lit(p, "\",\"api\":\"");
  p = str(p, api);
  p = lit(p, "\",\"memory_type\":\"");
  p = str(p, memory_type_name(event_memory_type(e)));
  p = lit(p, "\",\"address\":");
  p = u64(p, e.address);
  p = lit(p, ",\"size\":");
  p = u64(p, e.size);
  p = lit(p, ",\"result\":");
  p = i64(p, e.result);
  p = lit(p, ",\"thread_id\":");
  p = u64(p, e.tid);
  p = lit(p, ",\"stack_id\":");
  p = u64(p, e.stack_id);
  p = lit(p, ",\"duration_ns\":");
  p = u64(p, e.duration_ns);
  if (e.stream) {
    p = lit(p, ",\"stream\":");
    p = u64(p, e.stream);
  }
  p = lit(p, ",\"timestamp_ns\":");
  p = u64(p, e.time_ns);
  // memory_reserved and device_used would repeat memory_allocated, and
  // device_total / device_free are left out when unknown: see the comment
  // above set_identity.
  const int dev = event_device(e);
  const uint64_t total = dev >= 0 ? ctx.device_total[dev] : 0;
  if (total) {
    p = lit(p, ",\"device_total\":");
    p = u64(p, total);
  }
  if (ctx.has_failure_free && e.seq == ctx.failure_seq) {
    p = lit(p, ",\"device_free\":");
    p = u64(p, ctx.failure_free);
  }
  return size_t(p - out);
}

}  // namespace gpumemrec
