#include "shim/dump/write/event_json.h"

#include <cmath>
#include <cstring>

#include "common/bundle_schema.h"
#include "shim/base/hook_table.h"
#include "shim/dump/capture/history.h"
#include "shim/dump/write/launcher_env.h"

namespace gpumemrec {

namespace {

inline char* put(char* p, const char* s, size_t n) {
  std::memcpy(p, s, n);
  return p + n;
}
// `,"name":` (no comma for the first key of a record): the schema's key,
// copied with its length known at compile time.
template <size_t N>
inline char* put_key(char* p, const char (&name)[N], bool first = false) {
  if (!first) *p++ = ',';
  *p++ = '"';
  p = put(p, name, N - 1);
  *p++ = '"';
  *p++ = ':';
  return p;
}
// A string value; ours are ASCII names that need no escaping.
inline char* put_text(char* p, const char* s) {
  *p++ = '"';
  p = put(p, s, std::strlen(s));
  *p++ = '"';
  return p;
}

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
  char buf[64];
  auto add = [&](const auto& name, int64_t v) { tail.append(buf, size_t(i64(put_key(buf, name), v) - buf)); };
  tail.clear();
  add(key::kPid, pid);
  if (id.rank != 0 || id.local_rank != 0 || id.world_size != 1) {
    add(key::kRank, id.rank);
    add(key::kLocalRank, id.local_rank);
    add(key::kWorldSize, id.world_size);
  }
  if (id.has_job_id) {
    tail.append(buf, size_t(put_key(buf, key::kJobId) - buf));
    append_json_string(tail, id.job_id);
  }
  tail += '}';
}

size_t format_live_json(char* out, const model::Allocation& a, bool first) {
  char* p = out;
  if (!first) *p++ = ',';
  *p++ = '{';
  p = u64(put_key(p, key::kAddress, true), a.address);
  p = u64(put_key(p, key::kSize), a.size);
  p = i64(put_key(p, key::kDeviceId), a.device_id);
  p = put_text(put_key(p, key::kApi), a.api.c_str());
  p = put_text(put_key(p, key::kMemoryType), a.memory_type.c_str());
  // The model keeps whole microseconds (dump_model.cpp), exactly
  // representable as a double this side of the year 2255: llround gives
  // them back, written as events.json writes its timestamps.
  p = seconds(put_key(p, key::kTimestamp), uint64_t(std::llround(a.timestamp * 1e6)) * 1000);
  p = u64(put_key(p, key::kThreadId), a.thread_id);
  p = u64(put_key(p, key::kStackId), a.stack_id);
  p = u64(put_key(p, key::kSeq), a.seq);
  *p++ = '}';
  return size_t(p - out);
}

size_t format_event_json(char* out, const Event& e, bool first, const EventJsonContext& ctx) {
  const char* api = hook_name(e.api);
  const char* backend = backend_name(e.api < kHookCount ? hook_backend(HookId(e.api)) : Backend::kCuda);
  char* p = out;
  if (!first) *p++ = ',';
  *p++ = '{';
  p = u64(put_key(p, key::kSeq, true), e.seq);
  p = seconds(put_key(p, key::kTimestamp), e.time_ns);
  p = put_text(put_key(p, key::kEventType), event_type_name(event_kind(e)));
  p = u64(put_key(p, key::kMemoryAllocated), e.live_after);
  p = i64(put_key(p, key::kMemoryChange), event_memory_change(e));
  p = i64(put_key(p, key::kDeviceId), event_device(e));
  p = put_text(put_key(p, key::kContext), api);
  p = put_text(put_key(p, key::kBackend), backend);
  p = put_text(put_key(p, key::kApi), api);
  p = put_text(put_key(p, key::kMemoryType), memory_type_name(event_memory_type(e)));
  p = u64(put_key(p, key::kAddress), e.address);
  p = u64(put_key(p, key::kSize), e.size);
  p = i64(put_key(p, key::kResult), e.result);
  p = u64(put_key(p, key::kThreadId), e.tid);
  p = u64(put_key(p, key::kStackId), e.stack_id);
  p = u64(put_key(p, key::kDurationNs), e.duration_ns);
  if (e.stream) p = u64(put_key(p, key::kStream), e.stream);
  p = u64(put_key(p, key::kTimestampNs), e.time_ns);
  // memory_reserved and device_used would repeat memory_allocated, and
  // device_total / device_free are left out when unknown: see the comment
  // above set_identity.
  const int dev = event_device(e);
  const uint64_t total = dev >= 0 ? ctx.device_total[dev] : 0;
  if (total) p = u64(put_key(p, key::kDeviceTotal), total);
  if (ctx.has_failure_free && e.seq == ctx.failure_seq) p = u64(put_key(p, key::kDeviceFree), ctx.failure_free);
  return size_t(p - out);
}

}  // namespace gpumemrec
