#include "shim/dump/status/status_writer.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/framework_roles.h"
#include "shim/base/hook_table.h"
#include "shim/dump/capture/framework_report.h"

namespace gpumemrec {

namespace {

void copy_text(char* dst, size_t cap, const std::string& src) {
  const size_t n = std::min(src.size(), cap - 1);
  std::memcpy(dst, src.data(), n);
  std::memset(dst + n, 0, cap - n);
}

// The driver's PCI bus id of a device ordinal ("" when it cannot say):
// what the dump's NVML query matches by (query/gpu_processes.cpp).
void ask_bus_id(int device, char (&out)[status::kBusIdBytes]) {
  using BusIdFn = int (*)(char*, int, int);
  std::memset(out, 0, sizeof out);
  if (device < 0) return;
  for (auto [lib, name] : {std::pair{Library::CUDA, "cuDeviceGetPCIBusId"}, std::pair{Library::HIP, "hipDeviceGetPCIBusId"}}) {
    auto fn = reinterpret_cast<BusIdFn>(lookup_library_symbol(lib, name));
    if (fn && fn(out, int(sizeof out) - 1, device) == 0) return;
    std::memset(out, 0, sizeof out);
  }
}

}  // namespace

int RegionWriter::slot_of(int device) {
  for (int i = 0; i < ndevices_; ++i)
    if (devices_[i] == device) return i;
  if (ndevices_ == status::kDevices) return -1;
  devices_[ndevices_] = device;
  ask_bus_id(device, bus_[ndevices_]);
  return ndevices_++;
}

// Each slot's highest live bytes of the second; a sample per second ended
// (the seconds the process did not update, stopped or starved, repeat the
// value: at most a curve's length of them).
void RegionWriter::sample(const StatusFigures& f, uint64_t now) {
  for (const DeviceFigure& d : f.devices) {
    const int s = slot_of(d.device);
    if (s >= 0) second_max_[s] = std::max(second_max_[s], d.live);
  }
  if (second_end_ns_ == 0) second_end_ns_ = now + status::kCurveStepNs;
  if (now < second_end_ns_) return;
  const uint64_t seconds = std::min<uint64_t>((now - second_end_ns_) / status::kCurveStepNs + 1, status::kCurvePoints);
  for (uint64_t k = 0; k < seconds; ++k) {
    newest_ = (newest_ + 1) % status::kCurvePoints;
    ++samples_;
    for (int s = 0; s < ndevices_; ++s) curve_[s][newest_] = second_max_[s];
    for (int s = 0; s < ndevices_; ++s) second_max_[s] = 0;
    for (const DeviceFigure& d : f.devices) {  // what is live now starts the next second
      const int slot = slot_of(d.device);
      if (slot >= 0) second_max_[slot] = d.live;
    }
  }
  second_end_ns_ += seconds * status::kCurveStepNs;
  if (second_end_ns_ <= now) second_end_ns_ = now + status::kCurveStepNs;
}

void RegionWriter::follow_roles(const std::shared_ptr<const FrameworkReport>& latest, uint64_t now_real_ns) {
  if (latest.get() == roles_from_) return;
  roles_from_ = latest.get();
  roles_ = status::RolesSlot{};
  if (!latest) return;
  const FrameworkExtras x = parse_framework_extras(latest->digest.data(), latest->digest.size());
  if (!x.roles) return;
  roles_.present = 1;
  roles_.device = int32_t(x.roles->device);
  roles_.at_real_ns = now_real_ns;
  for (size_t i = 0; i < kRoleCount; ++i) roles_.bytes[i] = x.roles->bytes[i];
  copy_text(roles_.status, sizeof roles_.status, x.roles->status);
  copy_text(roles_.at, sizeof roles_.at, x.at == "exit" ? "exit" : "oom");
}

void RegionWriter::fill_body(status::Body* b, const StatusUpdate& u) const {
  const StatusFigures& f = *u.figures;
  b->updates = updates_;
  b->updated_mono_ns = u.now_mono_ns;
  b->updated_real_ns = u.now_real_ns;
  b->state = f.state;
  b->names = u.names;
  b->events = f.events;
  b->curve_newest = newest_;
  b->curve_count = samples_;
  b->curve_newest_mono_ns = second_end_ns_ - status::kCurveStepNs;
  b->ndevices = 0;
  for (const DeviceFigure& d : f.devices) {
    int s = 0;
    while (s < ndevices_ && devices_[s] != d.device) ++s;
    if (s == ndevices_) continue;  // past the first kDevices
    status::DeviceSlot& o = b->devices[b->ndevices++];
    o.device = d.device;
    o.flags = d.exact ? status::kPeakExact : 0;
    o.live_bytes = d.live;
    o.peak_bytes = d.peak;
    const int64_t to_real = int64_t(u.now_real_ns) - int64_t(u.now_mono_ns);
    o.peak_real_ns = d.peak_time_ns ? uint64_t(int64_t(d.peak_time_ns) + to_real) : 0;
    std::memcpy(o.bus_id, bus_[s], sizeof o.bus_id);
    std::memcpy(o.curve, curve_[s], sizeof o.curve);
  }
  const std::vector<SiteFigure>& sites = *u.sites;
  b->nsites = uint32_t(std::min<size_t>(sites.size(), status::kSites));
  b->sites_total = std::max<uint64_t>(u.sites_total, b->nsites);
  for (uint32_t i = 0; i < b->nsites; ++i) {
    status::SiteSlot& o = b->sites[i];
    o.bytes = sites[i].bytes;
    o.count = sites[i].count;
    o.stack_id = sites[i].stack_id;
    o.stacks = sites[i].stacks;
    o.named = sites[i].named ? 1 : 0;
    copy_text(o.label, sizeof o.label, sites[i].label);
    copy_text(o.library, sizeof o.library, sites[i].library);
  }
  b->roles = roles_;
  copy_text(b->note, sizeof b->note, f.note);
}

// The sequence lock's writer side: seq odd, the body, seq even (readers:
// common/status_read.h).
void RegionWriter::write(status::Region* reg, const StatusUpdate& u) {
  sample(*u.figures, u.now_mono_ns);
  ++updates_;
  const uint64_t seq = __atomic_load_n(&reg->seq, __ATOMIC_RELAXED) & ~uint64_t(1);  // one writer: even here
  __atomic_store_n(&reg->seq, seq + 1, __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_release);
  fill_body(&reg->body, u);
  __atomic_store_n(&reg->seq, seq + 2, __ATOMIC_RELEASE);
}

}  // namespace gpumemrec
