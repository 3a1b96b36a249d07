#include "tools/analysis.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>

#include "common/autograd_node.h"
#include "common/names.h"
#include "common/site_rules.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::analysis {

std::vector<CurvePoint> memory_curve(const Bundle& b, int32_t device, size_t max_points) {
  std::vector<CurvePoint> all;
  double t0 = 0, t1 = 0;
  size_t n = 0;
  for (const Event& e : b.events) {
    if (e.device_id != device) continue;
    if (n == 0) t0 = e.timestamp;
    t1 = e.timestamp;
    ++n;
  }
  if (max_points < 4) max_points = 4;
  if (n <= max_points) {
    all.reserve(n);
    for (const Event& e : b.events)
      if (e.device_id == device) all.push_back({e.timestamp, e.memory_allocated});
    return all;
  }
  size_t buckets = max_points / 2 - 1;
  double span = t1 > t0 ? t1 - t0 : 1.0;
  struct Bucket {
    bool used = false;
    CurvePoint mn{0, 0}, mx{0, 0};
    size_t imn = 0, imx = 0;
  };
  std::vector<Bucket> bk(buckets);
  size_t i = 0;
  CurvePoint last{0, 0};
  for (const Event& e : b.events) {
    if (e.device_id != device) continue;
    size_t k = static_cast<size_t>((e.timestamp - t0) / span * buckets);
    if (k >= buckets) k = buckets - 1;
    Bucket& x = bk[k];
    CurvePoint p{e.timestamp, e.memory_allocated};
    if (!x.used) {
      x.used = true;
      x.mn = x.mx = p;
      x.imn = x.imx = i;
    } else {
      if (p.v < x.mn.v) x.mn = p, x.imn = i;
      if (p.v > x.mx.v) x.mx = p, x.imx = i;
    }
    last = p;
    ++i;
  }
  all.reserve(max_points);
  for (const Bucket& x : bk) {
    if (!x.used) continue;
    if (x.imn == x.imx) {
      all.push_back(x.mn);
    } else if (x.imn < x.imx) {
      all.push_back(x.mn);
      all.push_back(x.mx);
    } else {
      all.push_back(x.mx);
      all.push_back(x.mn);
    }
  }
  if (all.empty() || all.back().t != last.t || all.back().v != last.v) all.push_back(last);
  return all;
}

std::vector<int32_t> devices(const Bundle& b) {
  std::set<int32_t> s;
  int32_t prev = -2;
  for (const Event& e : b.events) {
    if (e.device_id == prev) continue;
    prev = e.device_id;
    if (e.device_id >= 0) s.insert(e.device_id);
  }
  for (const Allocation& a : b.allocations)
    if (a.device_id >= 0) s.insert(a.device_id);
  if (b.metadata.device_id >= 0) s.insert(b.metadata.device_id);
  for (auto& kv : b.metadata.live_bytes_by_device)
    if (kv.first >= 0) s.insert(kv.first);
  return {s.begin(), s.end()};
}

int32_t failing_device(const Bundle& b) {
  if (b.metadata.device_id >= 0) return b.metadata.device_id;
  for (auto it = b.events.rbegin(); it != b.events.rend(); ++it)
    if (it->kind == EventKind::kOom && it->device_id >= 0) return it->device_id;
  auto d = devices(b);
  return d.empty() ? 0 : d.front();
}

std::vector<ApiCount> api_counts(const Bundle& b) {
  std::vector<ApiCount> by_id(b.strings.size());
  for (const Event& e : b.events) {
    ApiCount& c = by_id[e.api];
    switch (e.kind) {
      case EventKind::kAlloc: ++c.alloc; break;
      case EventKind::kFree: ++c.free; break;
      case EventKind::kOom: ++c.oom; break;
      case EventKind::kAllocFailed:
      case EventKind::kFreeFailed: ++c.failed; break;
      default: ++c.other; break;
    }
    ++c.total;
  }
  std::vector<ApiCount> out;
  for (size_t i = 0; i < by_id.size(); ++i) {
    if (by_id[i].total == 0) continue;
    by_id[i].api = b.strings.str(static_cast<uint16_t>(i));
    if (by_id[i].api.empty()) by_id[i].api = "(none)";
    out.push_back(by_id[i]);
  }
  std::sort(out.begin(), out.end(), [](const ApiCount& x, const ApiCount& y) {
    return x.total != y.total ? x.total > y.total : x.api < y.api;
  });
  return out;
}

std::vector<ContextDestruction> context_destructions(const Bundle& b) {
  std::vector<ContextDestruction> out;
  for (const Event& e : b.events) {
    if (e.kind != EventKind::kFree || !api_destroys_context(b.strings.str(e.api))) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const ContextDestruction& c) {
      return c.device == e.device_id && c.stack_id == e.stack_id && c.api == b.strings.str(e.api);
    });
    if (it == out.end()) {
      out.push_back(ContextDestruction{e.device_id, b.strings.str(e.api), e.stack_id, 0, 0, e.timestamp});
      it = out.end() - 1;
    }
    ++it->allocations;
    it->bytes += e.size;
  }
  return out;
}

std::pair<uint64_t, uint64_t> seq_range(const Bundle& b) {
  if (b.events.empty()) return {0, 0};
  uint64_t lo = b.events.front().seq, hi = lo;
  for (const auto& e : b.events) {
    lo = std::min(lo, e.seq);
    hi = std::max(hi, e.seq);
  }
  return {lo, hi};
}

uint64_t events_not_kept(const Bundle& b) {
  const uint64_t total = b.metadata.total_event_count;
  if (seq_range(b).first <= 1 || total <= b.events.size()) return 0;
  return total - b.events.size();
}

std::vector<size_t> oldest_live(const Bundle& b, size_t n) {
  std::vector<size_t> idx(b.allocations.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  auto older = [&](size_t x, size_t y) {
    const Allocation& a = b.allocations[x];
    const Allocation& c = b.allocations[y];
    // Time first: seq is not time order across threads (each thread fills
    // its own block of seqs, docs/bundle-format.md).
    if (a.timestamp != c.timestamp) return a.timestamp < c.timestamp;
    return a.seq < c.seq;
  };
  if (n < idx.size()) {
    std::partial_sort(idx.begin(), idx.begin() + n, idx.end(), older);
    idx.resize(n);
  } else {
    std::sort(idx.begin(), idx.end(), older);
  }
  return idx;
}

std::string site_line(const Stack& s, bool verbose) {
  const Frame* f = site::site_frame_of(s);
  std::string line = "site: " + (f ? names::frame_label(*f, verbose) : std::string("(no frames)"));
  if (!s.library.empty()) line += "  library: " + s.library;
  const std::string note = autograd::site_note(s);
  if (!note.empty()) line += "  [" + note + "]";
  return line;
}

std::vector<std::string> stack_lines(const Bundle& b, uint64_t stack_id, size_t max_frames, bool verbose,
                                     bool all_frames) {
  std::vector<std::string> out;
  const Stack* s = stack_id ? b.find_stack(stack_id) : nullptr;
  if (!s) {
    out.push_back(stack_id ? "(stack " + std::to_string(stack_id) + " not in stacks.json)" : "(no stack recorded)");
    return out;
  }
  std::string why = names::python_status_text(s->python);
  if (s->frames.empty()) {
    out.push_back("(empty stack" + (why.empty() ? ", python: " + (s->python.empty() ? std::string("?") : s->python) : ": " + why) + ")");
    return out;
  }
  out.push_back(site_line(*s, verbose));
  std::vector<site::FoldedLine> lines;
  if (all_frames) {
    for (size_t i = 0; i < s->frames.size(); ++i) lines.push_back({i, 1, "", false});
  } else {
    lines = site::fold_frames(*s, site::rules_from_environment());
  }
  const size_t n = std::min(max_frames, lines.size());
  for (size_t i = 0; i < n; ++i) {
    const site::FoldedLine& l = lines[i];
    const Frame& f = s->frames[l.first];
    if (l.count > 1) out.push_back("    " + site::folded_text(l));
    else out.push_back(std::string(f.kind == FrameKind::kPython ? "py  " : "    ") + names::frame_label(f, verbose));
  }
  if (n < lines.size()) {
    size_t more = 0;
    for (size_t i = n; i < lines.size(); ++i) more += lines[i].count;
    out.push_back("    ... " + std::to_string(more) + " more frames");
  }
  if (!why.empty()) out.push_back("    (" + why + ")");
  return out;
}

std::string top_frame(const Bundle& b, uint64_t stack_id, bool verbose) {
  const Stack* s = stack_id ? b.find_stack(stack_id) : nullptr;
  const Frame* f = s ? site::site_frame_of(*s) : nullptr;
  if (!f) return stack_id ? "stack " + std::to_string(stack_id) : "(no stack)";
  return names::frame_label(*f, verbose);
}

std::string library_of(const Bundle& b, uint64_t stack_id) {
  const Stack* s = stack_id ? b.find_stack(stack_id) : nullptr;
  return s ? s->library : std::string();
}

int64_t failing_oom_event(const Bundle& b) {
  const Metadata& m = b.metadata;
  if (m.api.empty()) return -1;  // signal / exit dump
  for (size_t i = b.events.size(); i-- > 0;) {
    const Event& e = b.events[i];
    if (e.kind == EventKind::kOom && e.thread_id == m.thread_id && e.device_id == m.device_id &&
        e.size == m.requested_bytes)
      return static_cast<int64_t>(i);
  }
  return -1;
}

std::vector<OomMark> oom_marks(const Bundle& b) {
  std::vector<OomMark> out;
  std::unordered_map<uint32_t, size_t> open;  // thread -> its latest OOM not yet recovered
  const std::string verdict = b.outcome();
  const int64_t own = verdict.empty() ? -1 : failing_oom_event(b);
  size_t own_mark = SIZE_MAX;
  for (size_t i = 0; i < b.events.size(); ++i) {
    const Event& e = b.events[i];
    if (e.kind == EventKind::kOom) {
      open[e.thread_id] = out.size();
      if (static_cast<int64_t>(i) == own) own_mark = out.size();
      out.push_back({e.timestamp, e.device_id, e.size, e.thread_id, e.api, false, {}});
    } else if (e.kind == EventKind::kAlloc && e.result == 0) {
      auto it = open.find(e.thread_id);
      if (it != open.end() && e.size >= out[it->second].size) {
        out[it->second].recovered = true;
        open.erase(it);
      }
    }
  }
  if (own_mark != SIZE_MAX) {
    OomMark& x = out[own_mark];
    x.verdict = verdict;
    if (verdict == "recovered") x.recovered = true;
    else if (verdict == "fatal") x.recovered = false;  // "unknown" (or a newer word): the inference stays
  }
  return out;
}

std::string sparkline(const std::vector<CurvePoint>& curve, size_t width, bool ascii, uint64_t* max_out) {
  static const char* blocks[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char ramp[] = " .:-=+*#%@";
  uint64_t mx = 0;
  for (const auto& p : curve) mx = std::max(mx, p.v);
  if (max_out) *max_out = mx;
  if (curve.empty() || width == 0) return "";
  double t0 = curve.front().t, t1 = curve.back().t;
  double span = t1 > t0 ? t1 - t0 : 1.0;
  std::vector<int64_t> col(width, -1);
  for (const auto& p : curve) {
    size_t k = static_cast<size_t>((p.t - t0) / span * width);
    if (k >= width) k = width - 1;
    col[k] = std::max<int64_t>(col[k], static_cast<int64_t>(p.v));
  }
  // Carry the level forward over empty columns (memory stays where it was).
  int64_t prev = 0;
  std::string out;
  for (size_t i = 0; i < width; ++i) {
    if (col[i] < 0) col[i] = prev;
    prev = col[i];
    double f = mx ? static_cast<double>(col[i]) / static_cast<double>(mx) : 0.0;
    if (ascii) {
      int k = static_cast<int>(f * 9 + 0.5);
      if (col[i] > 0 && k == 0) k = 1;
      out += ramp[k];
    } else {
      int k = static_cast<int>(f * 8 + 0.5);
      if (col[i] > 0 && k == 0) k = 1;
      out += blocks[k];
    }
  }
  return out;
}

}  // namespace gpumemrec::analysis
