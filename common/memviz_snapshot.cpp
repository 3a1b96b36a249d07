#include "common/memviz_snapshot.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/frame_order.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec {

const char* memviz_action_name(MemvizAction a) {
  switch (a) {
    case MemvizAction::kSegmentAlloc: return "segment_alloc";
    case MemvizAction::kAlloc: return "alloc";
    case MemvizAction::kFreeRequested: return "free_requested";
    case MemvizAction::kFreeCompleted: return "free_completed";
    case MemvizAction::kSegmentFree: return "segment_free";
    case MemvizAction::kOom: return "oom";
  }
  return "?";
}

namespace {

// Synthetic addresses for VMM handles: above every real virtual address
// (47/56-bit user space) and below 2^53 so JavaScript numbers stay exact.
constexpr uint64_t kHandleBase = 1ull << 52;
constexpr uint64_t kHandleAlign = 2ull << 20;

int32_t dev_index(int32_t d) { return d < 0 ? 0 : d; }

struct LiveKey {
  uint64_t address;
  bool physical;
  bool operator==(const LiveKey& o) const { return address == o.address && physical == o.physical; }
};
struct LiveKeyHash {
  size_t operator()(const LiveKey& k) const { return std::hash<uint64_t>()(k.address * 2 + k.physical); }
};

// What the replay does with an event (mapping ranges and failed calls: nothing).
enum class Step { kSkip, kAlloc, kFree, kOom };
Step step_of(const Event& e) {
  if (e.mem_kind == MemoryType::kMapping) return Step::kSkip;
  const bool ok = e.result == 0 && e.address != 0;
  if (e.kind == EventKind::kAlloc && ok) return Step::kAlloc;
  if (e.kind == EventKind::kFree && ok) return Step::kFree;
  return e.kind == EventKind::kOom ? Step::kOom : Step::kSkip;
}

struct Builder {
  const Bundle& b;
  MemvizPlan plan;
  std::unordered_map<LiveKey, MemvizSegment, LiveKeyHash> live;
  std::unordered_set<LiveKey, LiveKeyHash> touched;
  uint64_t next_handle_addr = kHandleBase;

  explicit Builder(const Bundle& bundle) : b(bundle) {
    // Never collide with a real address, however odd the input.
    uint64_t top = 0;
    for (const Event& e : b.events)
      if (e.mem_kind != MemoryType::kPhysical && e.address + e.size > top) top = e.address + e.size;
    for (const Allocation& a : b.allocations)
      if (a.memory_type != "physical" && a.address + a.size > top) top = a.address + a.size;
    if (top > next_handle_addr) next_handle_addr = (top + kHandleAlign - 1) / kHandleAlign * kHandleAlign;
    reserve_traces();
  }

  // Each trace's room, counted ahead: entries are pushed one at a time, and
  // a vector that doubles holds its old and new blocks at once (a 1M-event
  // bundle from the shim: ~2.5M entries of 56 bytes, 140 MiB, plus the old
  // block's ~117 MiB at the last growth; measured peak of the export 486 ->
  // 371 MiB). The count is exact but for repairs of inconsistent input,
  // which may still grow a trace.
  void reserve_traces() {
    static constexpr size_t kEntries[] = {0, 2, 3, 1};  // per Step: emit_alloc, emit_free, the oom entry
    std::vector<size_t> n;
    for (const Event& e : b.events) {
      const size_t k = kEntries[static_cast<int>(step_of(e))], d = static_cast<size_t>(dev_index(e.device_id));
      if (k && n.size() <= d) n.resize(d + 1);
      if (k) n[d] += k;
    }
    // Only devices with entries get a trace here (as replay_events would).
    for (size_t d = 0; d < n.size(); ++d)
      if (n[d]) trace(static_cast<int32_t>(d)).reserve(n[d]);
  }

  std::vector<MemvizTraceEntry>& trace(int32_t dev) {
    size_t d = static_cast<size_t>(dev_index(dev));
    if (plan.device_traces.size() <= d) plan.device_traces.resize(d + 1);
    return plan.device_traces[d];
  }
  uint64_t place(const LiveKey& k, uint64_t size) {
    if (!k.physical) return k.address;
    uint64_t a = next_handle_addr;
    uint64_t sz = size ? size : 1;
    next_handle_addr += (sz + kHandleAlign - 1) / kHandleAlign * kHandleAlign;
    return a;
  }
  void emit_alloc(const MemvizSegment& s, int64_t t) {
    auto& tr = trace(s.device);
    tr.push_back({MemvizAction::kSegmentAlloc, s.address, s.size, s.stream, s.stack_id, t, 0});
    tr.push_back({MemvizAction::kAlloc, s.address, s.size, s.stream, s.stack_id, t, 0});
  }
  void emit_free(const MemvizSegment& s, uint64_t stack_id, int64_t t) {
    auto& tr = trace(s.device);
    tr.push_back({MemvizAction::kFreeRequested, s.address, s.size, s.stream, stack_id, t, 0});
    tr.push_back({MemvizAction::kFreeCompleted, s.address, s.size, s.stream, stack_id, t, 0});
    tr.push_back({MemvizAction::kSegmentFree, s.address, s.size, s.stream, stack_id, t, 0});
  }

  void on_alloc(const Event& e, const LiveKey& k, int64_t t) {
    touched.insert(k);
    auto it = live.find(k);
    if (it != live.end()) {  // missed free: release the old one first
      emit_free(it->second, 0, t);
      plan.synthetic_entries += 3;
      live.erase(it);
    }
    MemvizSegment s{dev_index(e.device_id), place(k, e.size), e.size, e.stream, e.stack_id};
    emit_alloc(s, t);
    live.emplace(k, s);
  }

  void on_free(const Event& e, const LiveKey& k, int64_t t) {
    touched.insert(k);
    auto it = live.find(k);
    if (it != live.end()) {
      emit_free(it->second, e.stack_id, t);
      live.erase(it);
    } else if (e.size > 0) {
      // Allocated before the ring: free a segment that existed at the start.
      MemvizSegment s{dev_index(e.device_id), place(k, e.size), e.size, e.stream, 0};
      emit_free(s, e.stack_id, t);
      ++plan.pre_existing_frees;
    } else {
      ++plan.skipped_frees;
    }
  }

  // The events in order; returns the time of the last one (or of the dump).
  int64_t replay_events() {
    int64_t last_t = 0;
    for (const Event& e : b.events) {
      int64_t t = static_cast<int64_t>(std::llround(e.timestamp * 1e6));
      last_t = t;
      const Step step = step_of(e);
      LiveKey k{e.address, e.mem_kind == MemoryType::kPhysical};
      if (step == Step::kAlloc) on_alloc(e, k, t);
      else if (step == Step::kFree) on_free(e, k, t);
      else if (step == Step::kOom) {
        uint64_t device_free = b.metadata.device_free_bytes.value_or(0);
        trace(e.device_id).push_back({MemvizAction::kOom, 0, e.size, e.stream, e.stack_id, t, device_free});
      }
    }
    if (b.metadata.timestamp > 0) {
      int64_t mt = static_cast<int64_t>(std::llround(b.metadata.timestamp * 1e6));
      if (mt > last_t) last_t = mt;
    }
    return last_t;
  }

  // Reconcile with allocations.json (the live set at dump time).
  void reconcile_with_live_set(int64_t last_t) {
    std::unordered_set<LiveKey, LiveKeyHash> in_final;
    for (const Allocation& a : b.allocations) {
      MemoryType mt = memory_type_from_name(a.memory_type);
      if (mt == MemoryType::kMapping || a.address == 0) continue;
      LiveKey k{a.address, mt == MemoryType::kPhysical};
      if (!in_final.insert(k).second) continue;  // duplicate entry
      auto it = live.find(k);
      if (it != live.end()) {
        if (it->second.stack_id == 0) it->second.stack_id = a.stack_id;
        continue;
      }
      MemvizSegment s{dev_index(a.device_id), place(k, a.size), a.size, 0, a.stack_id};
      if (touched.count(k)) {
        // The trace saw this address and left it free: allocate it at the end.
        emit_alloc(s, last_t);
        plan.synthetic_entries += 2;
      } else {
        ++plan.pre_existing_segments;
      }
      live.emplace(k, s);
    }
  }

  void run() {
    reconcile_with_live_set(replay_events());
    plan.segments.reserve(live.size());
    for (auto& kv : live) plan.segments.push_back(kv.second);
    std::sort(plan.segments.begin(), plan.segments.end(), [](const MemvizSegment& x, const MemvizSegment& y) {
      return x.device != y.device ? x.device < y.device : x.address < y.address;
    });
    for (const auto& s : plan.segments) trace(s.device);  // every device with segments gets a trace list
  }
};

// Pickle emission with memoized keys, strings and per-stack frame lists.
struct Emitter {
  const Bundle& b;
  PickleWriter& w;
  enum Key {
    K_ACTION, K_ADDR, K_SIZE, K_STREAM, K_TIME_US, K_FRAMES, K_DEVICE_FREE, K_DEVICE, K_ADDRESS,
    K_TOTAL_SIZE, K_ALLOCATED_SIZE, K_ACTIVE_SIZE, K_REQUESTED_SIZE, K_SEGMENT_TYPE,
    K_SEGMENT_POOL_ID, K_IS_EXPANDABLE, K_BLOCKS, K_STATE, K_FILENAME, K_LINE, K_NAME,
    K_ACTIVE_ALLOCATED, K_LARGE, K_SEGMENTS, K_DEVICE_TRACES, K_COUNT
  };
  static constexpr const char* kNames[K_COUNT] = {
      "action", "addr", "size", "stream", "time_us", "frames", "device_free", "device", "address",
      "total_size", "allocated_size", "active_size", "requested_size", "segment_type",
      "segment_pool_id", "is_expandable", "blocks", "state", "filename", "line", "name",
      "active_allocated", "large", "segments", "device_traces"};
  uint32_t slots[K_COUNT];
  uint32_t action_slots[6];
  std::unordered_map<uint64_t, uint32_t> frames_memo;

  Emitter(const Bundle& bundle, PickleWriter& writer) : b(bundle), w(writer) {
    std::fill(std::begin(slots), std::end(slots), UINT32_MAX);
    std::fill(std::begin(action_slots), std::end(action_slots), UINT32_MAX);
  }
  void key(Key k) { w.memo_string(kNames[k], &slots[k]); }

  void frame(const Frame& f) {
    w.empty_dict();
    w.mark();
    key(K_FILENAME);
    if (!f.file.empty()) w.string(f.file);
    else w.string(f.module);
    key(K_LINE);
    w.integer(f.line);
    key(K_NAME);
    if (!f.function.empty()) {
      w.string(f.function);
    } else {
      size_t slash = f.module.rfind('/');
      std::string n = f.module.empty() ? "??" : f.module.substr(slash == std::string::npos ? 0 : slash + 1);
      char buf[32];
      snprintf(buf, sizeof buf, "+0x%" PRIx64, f.offset);
      w.string(n + buf);
    }
    w.setitems();
  }
  void frames(uint64_t stack_id) {
    auto it = frames_memo.find(stack_id);
    if (it != frames_memo.end()) {
      w.get(it->second);
      return;
    }
    w.empty_list();
    const Stack* s = stack_id ? b.find_stack(stack_id) : nullptr;
    if (s && !s->frames.empty()) {
      w.mark();
      for (const Frame* f : ordered_frames(*s)) frame(*f);  // PyTorch's order
      w.appends();
    }
    frames_memo.emplace(stack_id, w.put());
  }

  void trace_entry(const MemvizTraceEntry& e) {
    w.empty_dict();
    w.mark();
    key(K_ACTION);
    w.memo_string(memviz_action_name(e.action), &action_slots[static_cast<int>(e.action)]);
    if (e.action != MemvizAction::kOom) {
      key(K_ADDR);
      w.uinteger(e.addr);
    } else {
      key(K_DEVICE_FREE);
      w.uinteger(e.device_free);
    }
    key(K_SIZE);
    w.uinteger(e.size);
    key(K_STREAM);
    w.uinteger(e.stream);
    key(K_TIME_US);
    w.integer(e.time_us);
    key(K_FRAMES);
    frames(e.stack_id);
    w.setitems();
  }

  void segment(const MemvizSegment& s) {
    w.empty_dict();
    w.mark();
    key(K_DEVICE); w.integer(s.device);
    key(K_ADDRESS); w.uinteger(s.address);
    key(K_TOTAL_SIZE); w.uinteger(s.size);
    key(K_ALLOCATED_SIZE); w.uinteger(s.size);
    key(K_ACTIVE_SIZE); w.uinteger(s.size);
    key(K_REQUESTED_SIZE); w.uinteger(s.size);
    key(K_STREAM); w.uinteger(s.stream);
    key(K_SEGMENT_TYPE); key(K_LARGE);
    key(K_SEGMENT_POOL_ID); w.integer(0); w.integer(0); w.tuple2();
    key(K_IS_EXPANDABLE); w.boolean(false);
    key(K_FRAMES); frames(s.stack_id);
    key(K_BLOCKS);
    w.empty_list();
    w.empty_dict();
    w.mark();
    key(K_ADDRESS); w.uinteger(s.address);
    key(K_SIZE); w.uinteger(s.size);
    key(K_REQUESTED_SIZE); w.uinteger(s.size);
    key(K_STATE); key(K_ACTIVE_ALLOCATED);
    key(K_FRAMES); frames(s.stack_id);
    w.setitems();
    w.append();
    w.setitems();
  }
};

constexpr size_t kBatch = 1000;  // items per MARK ... APPENDS, like CPython

}  // namespace

MemvizPlan build_memviz_plan(const Bundle& b) {
  Builder builder(b);
  builder.run();
  return std::move(builder.plan);
}

bool write_memviz_pickle(const Bundle& b, const MemvizPlan& plan, PickleWriter& w) {
  Emitter em(b, w);
  w.begin();
  w.empty_dict();
  w.mark();
  em.key(Emitter::K_SEGMENTS);
  w.empty_list();
  for (size_t i = 0; i < plan.segments.size(); i += kBatch) {
    w.mark();
    for (size_t j = i; j < std::min(plan.segments.size(), i + kBatch); ++j) em.segment(plan.segments[j]);
    w.appends();
  }
  em.key(Emitter::K_DEVICE_TRACES);
  w.empty_list();
  for (const auto& tr : plan.device_traces) {
    w.empty_list();
    for (size_t i = 0; i < tr.size(); i += kBatch) {
      w.mark();
      for (size_t j = i; j < std::min(tr.size(), i + kBatch); ++j) em.trace_entry(tr[j]);
      w.appends();
    }
    w.append();
  }
  w.setitems();
  return w.end();
}

}  // namespace gpumemrec
