#include "shim/dump/write/dump_model.h"

#include "common/card_accounting.h"
#include "common/site_rules.h"
#include "shim/base/hook_table.h"
#include "shim/dump/write/bundle_files.h"
#include "shim/dump/capture/history.h"
#include "shim/dump/query/stack_model.h"
#include "shim/dump/query/symbolizer.h"
#include "shim/dump/verdict/verdict_text.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

model::Allocation model_allocation(const LiveEntry& a) {
  model::Allocation m;
  m.address = a.key;
  m.size = a.size;
  m.device_id = a.device;
  m.api = hook_name(a.api);
  m.memory_type = memory_type_name(MemoryType(a.memory_type));
  m.timestamp = double(a.time_ns / 1000) / 1e6;  // whole microseconds, as events.json (format_live_json)
  m.thread_id = a.tid;
  m.stack_id = a.stack_id;
  m.seq = a.seq;
  return m;
}

void fill_metadata(const BundleInput& in, const DumpSnapshot& snap, model::Metadata* m) {
  const FailureInfo* f = in.failure;
  m->reason = dump_reason_name(in.reason);
  m->backend = backend_name(in.backend);
  if (f) {
    m->api = hook_name(f->api);
    m->error_code = f->result;
    m->error_name = failure_error_name(in);
    m->requested_bytes = f->size;
    m->device_id = f->device;
    m->thread_id = f->tid;
    m->stack_id = f->stack_id;
  } else if (bundle_device(in) >= 0) {
    m->device_id = bundle_device(in);  // framework_oom: the framework's device
  }
  if (in.devices.has_mem_info) {
    m->device_free_bytes = in.devices.free_bytes;
    m->device_total_bytes = in.devices.total_bytes;
  }
  if (!in.devices.simulated_profile.empty()) {
    m->simulated = model::Metadata::Simulated{in.devices.simulated_profile,
                                              in.devices.devices.empty() ? "" : in.devices.devices[0].name,
                                              in.devices.simulated_devices};
  }
  m->live_bytes = snap.live_bytes;
  m->live_allocations = snap.live_count;
  for (auto& kv : snap.live_by_device) m->live_bytes_by_device[kv.first] = kv.second;
  m->context = failure_context(in);
  m->captured_event_count = snap.event_count;
  m->total_event_count = snap.end_seq - 1;
  m->events_since_start = false;
  for (const Event& e : snap.events) m->events_since_start |= e.seq == 1;
  m->failed_calls_before_dump = in.failed_calls_before_dump;
  m->frozen_after_failure_ms = double(in.frozen_after_failure_ns / 1000) / 1000.0;
  m->signal_requests = in.signal_requests;
  m->timestamp = seconds(f ? f->time_ns : in.created_ns);
}

model::NvmlProcesses nvml_view(const GpuProcessReport& g, Backend backend, const LiveAtFreeze& at_freeze,
                               int device) {
  model::NvmlProcesses n;
  n.available = g.available;
  if (at_freeze.known(device, g)) {
    n.self_change_bytes = at_freeze.driver_change(device, g);
    n.self_pool_change_bytes = at_freeze.pool_change(device, g);
  }
  n.self_moving = g.available && !g.self_live_known;
  n.note = backend == Backend::kHip ? "NVML is NVIDIA's: no per-process figures for the HIP backend" : g.error;
  for (const GpuProcess& p : g.processes) {
    model::GpuProcessUse u;
    u.pid = p.pid;
    u.name = p.name;
    if (p.has_used) u.used_bytes = p.used_bytes;
    u.this_process = p.is_self;
    n.processes.push_back(std::move(u));
  }
  return n;
}

// metadata.json device_accounting: the failing device (device 0 for a signal
// or exit dump, as gpu_processes) and every device holding recorded bytes.
// NVML is asked again for the devices other than the failing one (at most
// kMaxAccountedDevices of them).
void add_device_accounting(const BundleInput& in, const DumpSnapshot& snap, model::Bundle* b) {
  constexpr size_t kMaxAccountedDevices = 16;
  const int named = bundle_device(in);
  const int first = named >= 0 ? named : 0;
  std::vector<int> devices{first};
  for (auto& kv : snap.live_by_device)
    if (kv.first >= 0 && kv.first != first && devices.size() < kMaxAccountedDevices) devices.push_back(kv.first);
  for (int d : devices) {
    std::optional<uint64_t> total, free;
    if (named >= 0 && d == first && in.devices.has_mem_info) {
      total = in.devices.total_bytes;
      free = in.devices.free_bytes;
    }
    for (const DeviceInfo& di : in.devices.devices)
      if (!total && di.device_id == d && di.total_bytes) total = di.total_bytes;
    GpuProcessReport other;
    if (d != first && in.backend == Backend::kCuda) other = query_gpu_processes(d);
    const GpuProcessReport& g = d == first ? in.gpu_processes : other;
    const model::NvmlProcesses n = nvml_view(g, in.backend, in.live_at_freeze, d);
    b->metadata.device_accounting.push_back(model::account_device(*b, d, total, free, n));
  }
}

model::RecoveredFailure model_recovered(const RecoveredFailure& r) {
  model::RecoveredFailure m;
  m.timestamp = seconds(r.time_ns);
  m.device_id = r.device;
  m.size = r.size;
  m.api = hook_name(r.api);
  m.thread_id = r.tid;
  m.stack_id = r.stack_id;
  m.after_ms = double(r.after_ns) / 1e6;
  m.freed_bytes = r.freed_bytes;
  return m;
}

model::Recovery model_recovery(const Recovery& r) {
  model::Recovery m;
  m.after_ms = double(r.after_ns) / 1e6;
  m.freed_bytes = r.freed_bytes;
  m.retry_size = r.retry_size;
  m.retry_api = r.retry_api == HookId::kCount ? "" : hook_name(r.retry_api);
  m.thread_id = r.tid;
  m.handler = r.handler;
  return m;
}

}  // namespace

void set_model_verdict(const BundleInput& in, model::Bundle* b) {
  model::Metadata& m = b->metadata;
  m.outcome = m.outcome_detail = b->manifest.outcome = "";
  m.recovery.reset();
  if (has_verdict(in)) {  // out-of-memory bundles only (docs/bundle-format.md)
    m.outcome = b->manifest.outcome = outcome_name(in.verdict.outcome);
    m.outcome_detail = outcome_detail(in.verdict, in.episode_ms);
    if (in.verdict.outcome == Outcome::kRecovered) m.recovery = model_recovery(in.verdict.recovery);
  }
  m.recovered_count = in.recovered.count;
  m.recovered_listed.clear();
  for (const RecoveredFailure& r : in.recovered.listed) m.recovered_listed.push_back(model_recovered(r));
}

std::vector<model::Stack> symbolize_stacks(Recorder* r, Symbolizer& sym, const std::vector<uint32_t>& ids) {
  std::vector<model::Stack> out;
  out.reserve(ids.size());
  for (uint32_t id : ids)
    if (id != StackTable::kFull) out.push_back(stack_model(r, id, [&](uint64_t ip) { return native_frame(sym.describe(ip)); }));
  return out;
}

void build_model(const BundleInput& in, const DumpSnapshot& snap, std::vector<model::Stack> stacks,
                 model::Bundle* b) {
  b->allocations.reserve(snap.live.size());
  for (const LiveEntry& a : snap.live) b->allocations.push_back(model_allocation(a));
  b->stacks = std::move(stacks);
  const site::Rules rules(in.recorder ? in.recorder->cfg.site_skip : std::vector<std::string>());
  for (model::Stack& s : b->stacks) site::attribute(&s, rules);
  for (size_t i = 0; i < b->stacks.size(); ++i) b->stack_index.emplace(b->stacks[i].stack_id, i);
  fill_metadata(in, snap, &b->metadata);
  add_device_accounting(in, snap, b);
  b->manifest.bundle_name = in.bundle_name;
  b->manifest.reason = b->metadata.reason;
  b->manifest.backend = b->metadata.backend;
  b->manifest.event_count = snap.event_count;
  set_model_verdict(in, b);
}

void add_model_events(const DumpSnapshot& snap, model::Bundle* b) {
  b->events.reserve(snap.events.size());
  for (const Event& e : snap.events) {
    model::Event m;
    const EventKind k = event_kind(e);
    const char* api = hook_name(e.api);
    m.seq = e.seq;
    m.timestamp = double(e.time_ns / 1000) / 1e6;  // microseconds, as events.json
    m.memory_allocated = m.memory_reserved = e.live_after;
    m.memory_change = event_memory_change(e);
    m.address = e.address;
    m.size = e.size;
    m.stack_id = e.stack_id;
    m.duration_ns = e.duration_ns;
    m.stream = e.stream;
    m.result = e.result;
    m.device_id = event_device(e);
    m.thread_id = e.tid;
    m.event_type = b->strings.intern(event_type_name(k));
    m.api = m.context = b->strings.intern(api);
    m.backend = b->strings.intern(backend_name(e.api < kHookCount ? hook_backend(HookId(e.api)) : Backend::kCuda));
    m.memory_type = b->strings.intern(memory_type_name(event_memory_type(e)));
    m.kind = k;
    m.mem_kind = event_memory_type(e);
    b->events.push_back(m);
  }
}

}  // namespace gpumemrec
