#include "common/status_read.h"

#include <cstring>

namespace gpumemrec::status {

namespace {

// Length of the UTF-8 sequence at s[0, n) (1 to 4), 0 when it is not a
// valid, shortest-form, non-surrogate sequence.
size_t utf8_length(const unsigned char* s, size_t n) {
  const unsigned char c = s[0];
  size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len == 0 || len > n) return 0;
  uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3f);
  }
  static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) return 0;  // C0, DEL, C1: terminal controls
  return len;
}

bool text(const char* field, size_t cap, std::string* out, const char* name, std::string* why) {
  if (field_text(field, cap, out)) return true;
  *why = std::string("field ") + name + " is not terminated";
  return false;
}

bool fail(std::string* why, const std::string& what) {
  *why = what;
  return false;
}

bool read_identity(const Region& r, RegionView* v, std::string* why) {
  v->uid = r.uid;
  v->pid = r.pid;
  v->pid_ns = r.pid_ns;
  v->start_ticks = r.start_ticks;
  v->rank = r.rank;
  v->world_size = r.world_size;
  v->dump_signal = r.dump_signal;
  v->watch_until_mono_ns = r.watch_until_mono_ns;
  if (r.pid <= 0) return fail(why, "pid " + std::to_string(r.pid) + " is not a process id");
  if (r.world_size < 1 || r.rank < -1 || r.rank >= r.world_size)
    return fail(why, "rank " + std::to_string(r.rank) + " of " + std::to_string(r.world_size) + " is impossible");
  if (r.dump_signal < 0 || r.dump_signal > 64) return fail(why, "dump signal " + std::to_string(r.dump_signal) + " is not a signal");
  return text(r.boot_id, sizeof r.boot_id, &v->boot_id, "boot_id", why) &&
         text(r.command, sizeof r.command, &v->command, "command", why) &&
         text(r.dump_dir, sizeof r.dump_dir, &v->dump_dir, "dump_dir", why);
}

bool read_device(const DeviceSlot& d, const Body& b, DeviceView* v, std::string* why) {
  if (d.device < -1 || d.device > 64) return fail(why, "device " + std::to_string(d.device) + " is out of range");
  if ((d.flags & ~kDeviceFlags) != 0) return fail(why, "unknown device flags");
  v->device = d.device;
  v->peak_exact = (d.flags & kPeakExact) != 0;
  v->live_bytes = d.live_bytes;
  v->peak_bytes = d.peak_bytes;
  v->peak_real_ns = d.peak_real_ns;
  if (!text(d.bus_id, sizeof d.bus_id, &v->bus_id, "bus_id", why)) return false;
  const uint64_t kept = b.curve_count < uint64_t(kCurvePoints) ? b.curve_count : uint64_t(kCurvePoints);
  v->curve.clear();
  v->curve.reserve(size_t(kept));
  for (uint64_t i = kept; i > 0; --i) v->curve.push_back(d.curve[(b.curve_newest + kCurvePoints + 1 - i) % kCurvePoints]);
  return true;
}

bool read_site(const SiteSlot& s, SiteView* v, std::string* why) {
  if (s.named > 1) return fail(why, "a site's named flag is neither 0 nor 1");
  if (s.count > s.bytes && s.bytes != 0) return fail(why, "a site holds more allocations than bytes");
  v->bytes = s.bytes;
  v->count = s.count;
  v->stack_id = s.stack_id;
  v->stacks = s.stacks;
  v->named = s.named == 1;
  return text(s.label, sizeof s.label, &v->label, "label", why) &&
         text(s.library, sizeof s.library, &v->library, "library", why);
}

bool read_roles(const RolesSlot& r, RolesView* v, std::string* why) {
  if (r.present > 1) return fail(why, "the roles' present flag is neither 0 nor 1");
  v->present = r.present == 1;
  if (!v->present) return true;
  if (r.device < -1 || r.device > 64) return fail(why, "the roles' device is out of range");
  v->device = r.device;
  v->at_real_ns = r.at_real_ns;
  std::memcpy(v->bytes, r.bytes, sizeof v->bytes);
  return text(r.status, sizeof r.status, &v->status, "roles status", why) &&
         text(r.at, sizeof r.at, &v->at, "roles at", why);
}

bool read_body(const Body& b, RegionView* v, std::string* why) {
  if (b.updates == 0) return fail(why, "never updated");
  if (b.state > kStateLast) return fail(why, "unknown state " + std::to_string(b.state));
  if (b.names > kNamesLast) return fail(why, "unknown names state " + std::to_string(b.names));
  if (b.ndevices > uint32_t(kDevices)) return fail(why, std::to_string(b.ndevices) + " devices listed (at most 8)");
  if (b.nsites > uint32_t(kSites)) return fail(why, std::to_string(b.nsites) + " sites listed (at most 16)");
  if (b.curve_newest >= uint64_t(kCurvePoints)) return fail(why, "curve index out of range");
  if (b.sites_total < b.nsites) return fail(why, "fewer sites in total than listed");
  v->updates = b.updates;
  v->updated_mono_ns = b.updated_mono_ns;
  v->updated_real_ns = b.updated_real_ns;
  v->state = b.state;
  v->names = b.names;
  v->sites_total = b.sites_total;
  v->events = b.events;
  v->curve_newest_mono_ns = b.curve_newest_mono_ns;
  v->devices.resize(b.ndevices);
  for (uint32_t i = 0; i < b.ndevices; ++i) {
    if (!read_device(b.devices[i], b, &v->devices[i], why)) return false;
    for (uint32_t j = 0; j < i; ++j)
      if (v->devices[j].device == v->devices[i].device) return fail(why, "a device is listed twice");
  }
  v->sites.resize(b.nsites);
  for (uint32_t i = 0; i < b.nsites; ++i)
    if (!read_site(b.sites[i], &v->sites[i], why)) return false;
  return read_roles(b.roles, &v->roles, why) && text(b.note, sizeof b.note, &v->note, "note", why);
}

}  // namespace

bool field_text(const char* field, size_t cap, std::string* out) {
  const void* nul = std::memchr(field, '\0', cap);
  if (!nul) return false;
  const size_t n = size_t(static_cast<const char*>(nul) - field);
  const auto* s = reinterpret_cast<const unsigned char*>(field);
  out->clear();
  out->reserve(n);
  for (size_t i = 0; i < n;) {
    const size_t len = utf8_length(s + i, n - i);
    if (len == 0) {
      out->push_back('?');
      ++i;
    } else {
      out->append(field + i, len);
      i += len;
    }
  }
  return true;
}

bool read_region(const void* bytes, size_t n, RegionView* out, std::string* why) {
  *out = RegionView();
  if (n < offsetof(Region, version) + sizeof(uint32_t)) return fail(why, "truncated (" + std::to_string(n) + " bytes)");
  Region r;
  std::memset(&r, 0, sizeof r);
  std::memcpy(&r, bytes, n < sizeof r ? n : sizeof r);
  if (std::memcmp(r.magic, kMagic, sizeof kMagic) != 0) return fail(why, "not a gpumemrec status region");
  if (r.version != kVersion)
    return fail(why, "region version " + std::to_string(r.version) + " (this gpumemrec reads version " +
                         std::to_string(kVersion) + ")");
  if (n < sizeof r) return fail(why, "truncated (" + std::to_string(n) + " of " + std::to_string(sizeof r) + " bytes)");
  if (r.size != sizeof r || n != sizeof r)
    return fail(why, "size " + std::to_string(r.size) + " (" + std::to_string(sizeof r) + " expected)");
  if (r.seq & 1) return fail(why, "being written");
  out->seq = r.seq;
  return read_identity(r, out, why) && read_body(r.body, out, why);
}

std::string check_identity(const RegionView& v, const Expect& e) {
  if (v.uid != e.uid) return "written for uid " + std::to_string(v.uid);
  if (v.pid != e.pid || v.start_ticks != e.start_ticks) return "its name does not match its process";
  if (!e.boot_id.empty() && v.boot_id != e.boot_id) return "left from an earlier boot";
  if (e.pid_ns != 0 && v.pid_ns != e.pid_ns) return "a process in another PID namespace (cannot be checked)";
  if (!e.alive) return "process gone";
  // Differences, not sums: a hostile time near 2^64 must not wrap.
  if (v.updated_mono_ns > e.now_mono_ns && v.updated_mono_ns - e.now_mono_ns > 1000000000ull)
    return "updated in the future";
  if (e.now_mono_ns > v.updated_mono_ns && e.now_mono_ns - v.updated_mono_ns > e.stale_after_ns)
    return "no update for " + std::to_string((e.now_mono_ns - v.updated_mono_ns) / 1000000000ull) +
           " s (stopped, or it no longer runs the recorder)";
  return "";
}

}  // namespace gpumemrec::status
