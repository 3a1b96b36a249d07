#include "tools/chrome_trace.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "tools/cli.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {

void write_chrome_trace(const Bundle& b, OutputFile& out) {
  const int64_t pid = b.manifest.pid ? b.manifest.pid : b.environment.pid;
  double t0 = b.events.empty() ? b.metadata.timestamp : b.events.front().timestamp;
  std::string buf;
  buf.reserve(1 << 20);
  auto flush = [&] {
    if (buf.size() > (1 << 20) - 4096) {
      out.write(buf);
      buf.clear();
    }
  };
  char num[512];

  buf += "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"gpumemrec\",\"bundle\":";
  json_escape(buf, b.manifest.bundle_name);
  snprintf(num, sizeof num, ",\"t0_unix\":%.6f},\n\"traceEvents\":[\n", t0);
  buf += num;

  // Metadata: process and thread names.
  std::string pname = "gpumemrec pid " + std::to_string(pid);
  if (!b.hostname().empty()) pname += " on " + b.hostname();
  if (b.metadata.rank) pname += " (rank " + std::to_string(*b.metadata.rank) + ")";
  snprintf(num, sizeof num, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":0,\"args\":{\"name\":", pid);
  buf += num;
  json_escape(buf, pname);
  buf += "}}";
  std::set<uint32_t> threads;
  for (const Event& e : b.events) threads.insert(e.thread_id);
  for (uint32_t t : threads) {
    snprintf(num, sizeof num,
             ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":%u,\"args\":{\"name\":\"thread %u\"}}",
             pid, t, t);
    buf += num;
  }

  // Top frame per stack, escaped once.
  std::unordered_map<uint64_t, std::string> site;
  auto site_of = [&](uint64_t id) -> const std::string& {
    auto it = site.find(id);
    if (it != site.end()) return it->second;
    const Stack* s = id ? b.find_stack(id) : nullptr;
    std::string esc;
    json_escape(esc, s && !s->frames.empty() ? format_frame(s->frames.front()) : std::string());
    return site.emplace(id, std::move(esc)).first->second;
  };
  std::map<int32_t, uint64_t> last;
  std::vector<std::string> api_esc(b.strings.size());
  for (size_t i = 0; i < api_esc.size(); ++i) json_escape(api_esc[i], b.strings.str(static_cast<uint16_t>(i)));

  for (const Event& e : b.events) {
    double ts = (e.timestamp - t0) * 1e6;
    auto it = last.find(e.device_id);
    if (e.device_id >= 0 && (it == last.end() || it->second != e.memory_allocated)) {
      last[e.device_id] = e.memory_allocated;
      snprintf(num, sizeof num,
               ",\n{\"name\":\"live bytes device %d\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%" PRId64
               ",\"tid\":0,\"args\":{\"bytes\":%" PRIu64 "}}",
               e.device_id, ts, pid, e.memory_allocated);
      buf += num;
    }
    const char* what = nullptr;
    const char* scope = "t";
    switch (e.kind) {
      case EventKind::kAllocation: what = "alloc"; break;
      case EventKind::kDeallocation: what = "free"; break;
      case EventKind::kOom: what = "OOM"; scope = "p"; break;
      case EventKind::kAllocationFailed: what = "alloc failed"; break;
      case EventKind::kDeallocationFailed: what = "free failed"; break;
      case EventKind::kMap: what = "map"; break;
      case EventKind::kUnmap: what = "unmap"; break;
      default: what = "event"; break;
    }
    std::string name = std::string(what) + " " + b.str(e.api) + " " + human_bytes(e.size);
    buf += ",\n{\"name\":";
    json_escape(buf, name);
    snprintf(num, sizeof num,
             ",\"cat\":\"%s\",\"ph\":\"i\",\"s\":\"%s\",\"ts\":%.3f,\"pid\":%" PRId64 ",\"tid\":%u,\"args\":{\"seq\":%" PRIu64
             ",\"event_type\":\"%s\",\"device\":%d,\"size\":%" PRIu64 ",\"address\":\"0x%" PRIx64 "\",\"result\":%" PRId64
             ",\"memory_allocated\":%" PRIu64 ",\"stack_id\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"api\":",
             event_kind_name(e.kind), scope, ts, pid, e.thread_id, e.seq, event_kind_name(e.kind), e.device_id, e.size,
             e.address, e.result, e.memory_allocated, e.stack_id, e.duration_ns);
    buf += num;
    buf += api_esc[e.api];
    buf += ",\"memory_type\":";
    buf += api_esc[e.memory_type];
    buf += ",\"site\":";
    buf += site_of(e.stack_id);
    buf += "}}";
    flush();
  }
  buf += "\n]}\n";
  out.write(buf);
}

}  // namespace gpumemrec::cli
