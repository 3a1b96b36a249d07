#include "tools/verdict.h"

#include "tools/analysis.h"
#include "tools/cli.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {

std::string outcome_cell(const Bundle& b) {
  std::string o = b.outcome();
  return o.empty() ? "-" : o;
}

std::string outcome_line(const Bundle& b) {
  std::string o = b.outcome();
  if (o.empty()) return "";
  std::string detail = b.outcome_detail();
  return "  outcome: " + o + (detail.empty() ? "" : " - " + detail) + "\n";
}

std::string recovery_line(const Bundle& b) {
  const auto& r = b.metadata.recovery;
  if (!r || b.outcome() != "recovered") return "";
  if (!r->handler.empty())
    return "  recovered: " + r->handler + " caught the error on thread " + std::to_string(r->thread_id) + " " +
           human_duration(r->after_ms / 1e3) + " after the failure and retries with less\n";
  std::string api = r->retry_api.empty() ? "the retry" : r->retry_api + "(" + format_bytes(r->retry_size) + ")";
  return "  recovered: " + api + " on thread " + std::to_string(r->thread_id) + " succeeded " +
         human_duration(r->after_ms / 1e3) + " after the failure; " + format_bytes(r->freed_bytes) +
         " freed before it\n";
}

std::string recovered_failures_text(const Bundle& b, size_t max_rows, bool verbose) {
  const Metadata& m = b.metadata;
  if (m.recovered_count == 0) return "";
  std::string out = "\nRECOVERED OUT-OF-MEMORY FAILURES\n";
  out += "  Recovered out-of-memory failures since the previous bundle: " + std::to_string(m.recovered_count) + "\n";
  if (m.recovered_listed.empty()) return out;
  Table t({"TIME", "SIZE", "DEVICE", "API", "THREAD", "AFTER", "FREED", "SITE"}, "lrrlrrrl");
  size_t n = std::min(max_rows, m.recovered_listed.size());
  for (size_t i = 0; i < n; ++i) {
    const RecoveredFailure& f = m.recovered_listed[i];
    t.add({utc_time(f.timestamp), format_bytes(f.size), std::to_string(f.device_id), f.api.empty() ? "-" : f.api,
           std::to_string(f.thread_id), human_duration(f.after_ms / 1e3), format_bytes(f.freed_bytes),
           analysis::top_frame(b, f.stack_id, verbose)});
  }
  out += t.render("  ");
  if (m.recovered_count > n)
    out += "  ... " + std::to_string(m.recovered_count - n) + " more " +
           (n < m.recovered_listed.size() ? "(report --json lists " + std::to_string(m.recovered_listed.size()) + ")"
                                          : "not listed in the bundle") +
           "\n";
  return out;
}

namespace {

void json_recovery(JsonWriter& w, const Bundle& b) {
  w.Key("recovery");
  const auto& r = b.metadata.recovery;
  if (!r) {
    w.Null();
    return;
  }
  w.StartObject();
  json_kv(w, "after_ms", r->after_ms);
  json_kv(w, "freed_bytes", r->freed_bytes);
  json_kv(w, "retry_size", r->retry_size);
  json_kv(w, "retry_api", r->retry_api);
  json_kv(w, "thread_id", static_cast<uint64_t>(r->thread_id));
  json_kv_or_null(w, "handler", r->handler);
  w.EndObject();
}

void json_recovered(JsonWriter& w, const Bundle& b) {
  const Metadata& m = b.metadata;
  w.Key("recovered_failures");
  w.StartObject();
  json_kv(w, "count", m.recovered_count);
  w.Key("listed");
  w.StartArray();
  for (const RecoveredFailure& f : m.recovered_listed) {
    w.StartObject();
    json_kv(w, "timestamp", f.timestamp);
    json_kv(w, "time_utc", utc_time(f.timestamp));
    json_kv(w, "device", static_cast<int64_t>(f.device_id));
    json_kv(w, "size", f.size);
    json_kv(w, "api", f.api);
    json_kv(w, "thread_id", static_cast<uint64_t>(f.thread_id));
    json_kv(w, "stack_id", f.stack_id);
    json_kv(w, "site", analysis::top_frame(b, f.stack_id, false));
    json_kv(w, "after_ms", f.after_ms);
    json_kv(w, "freed_bytes", f.freed_bytes);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace

void json_verdict(JsonWriter& w, const Bundle& b) {
  json_kv_or_null(w, "outcome", b.outcome());
  json_kv_or_null(w, "outcome_detail", b.outcome_detail());
  json_recovery(w, b);
  json_recovered(w, b);
}

}  // namespace gpumemrec::cli
