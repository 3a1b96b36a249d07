#include "common/peak_json.h"

#include <rapidjson/document.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

namespace gpumemrec::model {

namespace {

constexpr size_t kMaxFileBytes = size_t(64) << 20;
constexpr size_t kMaxDevices = 1024;
constexpr size_t kMaxSites = 4096;
constexpr size_t kMaxText = 512;

using Value = rapidjson::Value;

// `key` of `o` as a non-negative integer; false and *why when it is not one.
bool u64(const Value& o, const char* key, uint64_t* out, std::string* why) {
  auto it = o.FindMember(key);
  if (it == o.MemberEnd() || !it->value.IsUint64()) {
    *why = std::string(key) + (it == o.MemberEnd() ? " is missing" : " is not a non-negative integer");
    return false;
  }
  *out = it->value.GetUint64();
  return true;
}

bool read_sites(const Value& d, PeakFigure* p, std::string* why) {
  auto it = d.FindMember("sites");
  if (it == d.MemberEnd() || it->value.IsNull()) return true;
  if (!it->value.IsArray()) {
    *why = "sites is not an array";
    return false;
  }
  for (const Value& s : it->value.GetArray()) {
    if (p->sites.size() >= kMaxSites) break;
    PeakSite x;
    if (!s.IsObject() || !u64(s, "stack_id", &x.stack_id, why) || !u64(s, "bytes", &x.bytes, why) ||
        !u64(s, "count", &x.count, why))
      return false;
    p->sites.push_back(x);
  }
  return true;
}

std::string text(const Value& o, const char* key) {
  auto it = o.FindMember(key);
  if (it == o.MemberEnd() || !it->value.IsString()) return "";
  return std::string(it->value.GetString(), std::min<size_t>(it->value.GetStringLength(), kMaxText));
}

bool flag(const Value& o, const char* key) {
  auto it = o.FindMember(key);
  return it != o.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}

bool read_libraries(const Value& d, PeakFigure* p, std::string* why) {
  auto it = d.FindMember("by_library");
  if (it == d.MemberEnd() || it->value.IsNull()) return true;
  if (!it->value.IsArray()) {
    *why = "by_library is not an array";
    return false;
  }
  for (const Value& l : it->value.GetArray()) {
    if (p->by_library.size() >= kMaxSites) break;
    PeakLibrary x;
    if (!l.IsObject() || !u64(l, "bytes", &x.bytes, why) || !u64(l, "count", &x.count, why)) return false;
    x.library = text(l, "library");
    p->by_library.push_back(std::move(x));
  }
  return true;
}

// peak_bytes (required), its moment, sites and libraries.
bool read_figure(const Value& d, PeakFigure* p, std::string* why) {
  if (!u64(d, "peak_bytes", &p->peak_bytes, why)) return false;
  std::string ignored;
  u64(d, "peak_time_ns", &p->peak_time_ns, &ignored);
  u64(d, "peak_seq", &p->peak_seq, &ignored);
  uint64_t until = 0;
  if (u64(d, "peak_until_ns", &until, &ignored)) p->peak_until_ns = until;
  return read_sites(d, p, why) && read_libraries(d, p, why);
}

bool read_after_gap(const Value& v, PeakAfterGap* a, std::string* why) {
  if (!v.IsObject()) {
    *why = "after_gap is not an object";
    return false;
  }
  if (!read_figure(v, a, why) || !u64(v, "from_time_ns", &a->from_time_ns, why)) return false;
  std::string ignored;
  u64(v, "gaps", &a->gaps, &ignored);
  u64(v, "lost_events", &a->lost_events, &ignored);
  u64(v, "from_seq", &a->from_seq, &ignored);
  u64(v, "start_bytes", &a->start_bytes, &ignored);
  a->exact = flag(v, "exact");
  a->why_inexact = text(v, "why_inexact");
  return true;
}

bool read_roles(const Value& v, PeakRoles* r, std::string* why) {
  if (!v.IsObject()) {
    *why = "roles is not an object";
    return false;
  }
  r->known = flag(v, "known");
  r->why_not_known = text(v, "why_not_known");
  r->framework = text(v, "framework");
  r->walk = text(v, "walk");
  r->walk_status = text(v, "walk_status");
  std::string ignored;
  u64(v, "walk_time_ns", &r->walk_time_ns, &ignored);
  auto b = v.FindMember("bytes");
  if (!r->known || b == v.MemberEnd() || b->value.IsNull()) return true;
  if (!b->value.IsObject()) {
    *why = "roles.bytes is not an object";
    return false;
  }
  for (auto& m : b->value.GetObject()) {
    if (r->bytes.size() >= 64) break;
    if (!m.value.IsUint64()) {
      *why = "roles.bytes." + std::string(m.name.GetString()) + " is not a non-negative integer";
      return false;
    }
    r->bytes.emplace_back(std::string(m.name.GetString(), std::min<size_t>(m.name.GetStringLength(), kMaxText)),
                          m.value.GetUint64());
  }
  return true;
}

// An optional object `key`: read, or left out with *soft said.
template <class T, class Read>
void read_part(const Value& d, const char* key, std::optional<T>* out, Read read, std::string* soft) {
  auto it = d.FindMember(key);
  if (it == d.MemberEnd() || it->value.IsNull()) return;
  T x;
  std::string why;
  if (read(it->value, &x, &why)) *out = std::move(x);
  else if (soft->empty()) *soft = "peak.json: " + why + " (left out)";
}

bool read_device(const Value& d, PeakDevice* p, std::string* why, std::string* soft) {
  if (!d.IsObject()) {
    *why = "a device is not an object";
    return false;
  }
  auto dev = d.FindMember("device");
  if (dev == d.MemberEnd() || !dev->value.IsInt()) {
    *why = "device is missing or not an integer";
    return false;
  }
  p->device = dev->value.GetInt();
  if (!read_figure(d, p, why)) return false;
  std::string ignored;
  u64(d, "live_now_bytes", &p->live_now_bytes, &ignored);
  u64(d, "events_replayed", &p->events_replayed, &ignored);
  p->exact = flag(d, "exact");
  p->why_inexact = text(d, "why_inexact");
  read_part(d, "after_gap", &p->after_gap, read_after_gap, soft);
  read_part(d, "roles", &p->roles, read_roles, soft);
  return true;
}

}  // namespace

PeakInfo parse_peak(const char* json, size_t len) {
  PeakInfo out;
  rapidjson::Document d;
  d.Parse<rapidjson::kParseStopWhenDoneFlag | rapidjson::kParseIterativeFlag>(json, len);
  auto devs = d.IsObject() ? d.FindMember("devices") : d.MemberEnd();
  if (d.HasParseError() || !d.IsObject() || devs == d.MemberEnd() || !devs->value.IsArray()) {
    out.problem = "peak.json: not a JSON object with a devices array";
    return out;
  }
  for (const Value& v : devs->value.GetArray()) {
    if (out.devices.size() >= kMaxDevices) break;
    PeakDevice p;
    std::string why;
    if (!read_device(v, &p, &why, &out.problem)) {
      out.devices.clear();
      out.problem = "peak.json: " + why;
      return out;
    }
    out.devices.push_back(std::move(p));
  }
  out.present = true;
  return out;
}

PeakInfo read_peak(const std::string& bundle_dir) {
  const std::string path = bundle_dir + "/peak.json";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  // Only a regular file (a FIFO would block, /dev/zero never end).
  if (!S_ISREG(st.st_mode)) return {false, "peak.json: not a regular file, not read", {}};
  if (uint64_t(st.st_size) > kMaxFileBytes) return {false, "peak.json: over 64 MiB, not read", {}};
  std::ifstream f(path, std::ios::binary);
  if (!f) return {false, "peak.json: cannot be opened", {}};
  std::ostringstream s;
  s << f.rdbuf();
  const std::string text = s.str();
  if (text.size() > kMaxFileBytes) return {false, "peak.json: over 64 MiB, not read", {}};
  return parse_peak(text.data(), text.size());
}

}  // namespace gpumemrec::model
