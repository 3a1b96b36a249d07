#include "tools/chrome_trace.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "common/site_rules.h"
#include "tools/cli.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {

namespace {

// Streams the JSON text to the output in ~1 MiB pieces.
class TraceText {
 public:
  explicit TraceText(OutputFile& out) : out_(out) { buf_.reserve(1 << 20); }
  std::string& buf() { return buf_; }
  void printf(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char num[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(num, sizeof num, fmt, ap);
    va_end(ap);
    if (n > 0) buf_.append(num, std::min<size_t>(size_t(n), sizeof num - 1));
  }
  void maybe_flush() {
    if (buf_.size() > (1 << 20) - 4096) flush();
  }
  void flush() {
    out_.write(buf_);
    buf_.clear();
  }

 private:
  OutputFile& out_;
  std::string buf_;
};

// An event's call began `duration_ns` before `timestamp` (when it returned).
double call_start(const Event& e) {
  return event_time_is_call_start(e.kind) ? e.timestamp : e.timestamp - double(e.duration_ns) * 1e-9;
}

// The earliest instant of the trace (the start of the earliest call).
double earliest_instant(const Bundle& b) {
  double t0 = b.metadata.timestamp;
  bool any = t0 > 0;
  for (const Event& e : b.events) {
    double t = call_start(e);
    if (!any || t < t0) t0 = t;
    any = true;
  }
  return any ? t0 : 0;
}

// `ts` of an instant: microseconds since the earliest instant, plus 1, so
// that every ts is > 0. Not 0 itself: DevTools' trace engine leaves events
// with ts 0 out of the trace bounds (models/trace/handlers/MetaHandler.js,
// `event.ts !== 0`, npm @paulirish/trace_engine), which would drop the first
// call. (Subtracting first keeps the earliest exactly at 1.000.)
constexpr double kFirstTsUs = 1.0;
double trace_us(double t, double earliest) { return std::max(0.0, (t - earliest) * 1e6) + kFirstTsUs; }

// otherData.t0_unix: the Unix time of ts 0.
void write_header(TraceText& o, const Bundle& b, double t0) {
  o.buf() += "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"gpumemrec\",\"bundle\":";
  json_escape(o.buf(), b.manifest.bundle_name);
  o.printf(",\"t0_unix\":%.6f},\n\"traceEvents\":[\n", t0 - kFirstTsUs * 1e-6);
}

// Process and thread names ("M" events); the first record of the array.
void write_names(TraceText& o, const Bundle& b, int64_t pid) {
  std::string pname = "gpumemrec pid " + std::to_string(pid);
  if (!b.hostname().empty()) pname += " on " + b.hostname();
  if (b.metadata.rank) pname += " (rank " + std::to_string(*b.metadata.rank) + ")";
  o.printf("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":0,\"args\":{\"name\":", pid);
  json_escape(o.buf(), pname);
  o.buf() += "}}";
  std::set<uint32_t> threads;
  for (const Event& e : b.events) threads.insert(e.thread_id);
  for (uint32_t t : threads)
    o.printf(",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":%u,\"args\":{\"name\":\"thread %u\"}}",
             pid, t, t);
}

// The site frame of each stack (common/site_rules.h), JSON-escaped once.
class Sites {
 public:
  explicit Sites(const Bundle& b) : b_(b) {}
  const std::string& of(uint64_t id) {
    auto it = site_.find(id);
    if (it != site_.end()) return it->second;
    const Stack* s = id ? b_.find_stack(id) : nullptr;
    const Frame* f = s ? site::site_frame_of(*s) : nullptr;
    std::string esc;
    json_escape(esc, f ? format_frame(*f) : std::string());
    return site_.emplace(id, std::move(esc)).first->second;
  }

 private:
  const Bundle& b_;
  std::unordered_map<uint64_t, std::string> site_;
};

const char* short_label(EventKind k) {
  switch (k) {
    case EventKind::kAlloc: return "alloc";
    case EventKind::kFree: return "free";
    case EventKind::kOom: return "OOM";
    case EventKind::kAllocFailed: return "alloc failed";
    case EventKind::kFreeFailed: return "free failed";
    case EventKind::kMap: return "map";
    case EventKind::kUnmap: return "unmap";
    default: return "event";
  }
}

std::string event_name(const Bundle& b, const Event& e) {
  return std::string(short_label(e.kind)) + " " + b.str(e.api) + " " + format_bytes(e.size);
}

// One counter track per device: "live bytes device N", a sample at each
// change of the process's live bytes on that device.
void write_counter(TraceText& o, const Event& e, double t0, int64_t pid) {
  o.printf(",\n{\"name\":\"live bytes device %d\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%" PRId64
           ",\"tid\":0,\"args\":{\"bytes\":%" PRIu64 "}}",
           e.device_id, trace_us(e.timestamp, t0), pid, e.memory_allocated);
}

// The intercepted call as a complete event ("X"): it began duration_ns
// before it returned.
void write_call(TraceText& o, const Bundle& b, const Event& e, double t0, int64_t pid,
                const std::vector<std::string>& esc, Sites& sites) {
  o.buf() += ",\n{\"name\":";
  json_escape(o.buf(), event_name(b, e));
  o.printf(",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId64 ",\"tid\":%u,\"args\":{\"seq\":%" PRIu64
           ",\"event_type\":\"%s\",\"device\":%d,\"size\":%" PRIu64 ",\"address\":\"0x%" PRIx64 "\",\"result\":%" PRId64
           ",\"memory_allocated\":%" PRIu64 ",\"stack_id\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"api\":",
           event_type_name(e.kind), trace_us(call_start(e), t0), double(e.duration_ns) / 1e3, pid, e.thread_id, e.seq,
           event_type_name(e.kind), e.device_id, e.size, e.address, e.result, e.memory_allocated, e.stack_id,
           e.duration_ns);
  o.buf() += esc[e.api];
  o.buf() += ",\"memory_type\":";
  o.buf() += esc[e.memory_type];
  o.buf() += ",\"site\":";
  o.buf() += sites.of(e.stack_id);
  o.buf() += "}}";
}

// An out-of-memory result also marks the whole process ("I", scope "p") at
// the instant the program saw it, so it stands out of the call tracks.
void write_oom_instant(TraceText& o, const Bundle& b, const Event& e, double t0, int64_t pid) {
  o.buf() += ",\n{\"name\":";
  json_escape(o.buf(), event_name(b, e));
  o.printf(",\"cat\":\"oom\",\"ph\":\"I\",\"s\":\"p\",\"ts\":%.3f,\"pid\":%" PRId64 ",\"tid\":%u,\"args\":{\"seq\":%" PRIu64
           ",\"device\":%d,\"size\":%" PRIu64 "}}",
           trace_us(e.timestamp, t0), pid, e.thread_id, e.seq, e.device_id, e.size);
}

}  // namespace

void write_chrome_trace(const Bundle& b, OutputFile& out) {
  const int64_t pid = b.manifest.pid ? b.manifest.pid : b.environment.pid;
  const double t0 = earliest_instant(b);
  TraceText o(out);
  write_header(o, b, t0);
  write_names(o, b, pid);

  std::vector<std::string> esc(b.strings.size());
  for (size_t i = 0; i < esc.size(); ++i) json_escape(esc[i], b.strings.str(static_cast<uint16_t>(i)));
  Sites sites(b);
  std::map<int32_t, uint64_t> last;  // device -> last counter value
  for (const Event& e : b.events) {
    auto it = last.find(e.device_id);
    if (e.device_id >= 0 && (it == last.end() || it->second != e.memory_allocated)) {
      last[e.device_id] = e.memory_allocated;
      write_counter(o, e, t0, pid);
    }
    write_call(o, b, e, t0, pid, esc, sites);
    if (e.kind == EventKind::kOom) write_oom_instant(o, b, e, t0, pid);
    o.maybe_flush();
  }
  o.buf() += "\n]}\n";
  o.flush();
}

}  // namespace gpumemrec::cli
