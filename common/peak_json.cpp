#include "common/peak_json.h"

#include <rapidjson/document.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
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

bool read_sites(const Value& d, PeakDevice* p, std::string* why) {
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

bool read_device(const Value& d, PeakDevice* p, std::string* why) {
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
  if (!u64(d, "peak_bytes", &p->peak_bytes, why)) return false;
  std::string ignored;
  u64(d, "peak_time_ns", &p->peak_time_ns, &ignored);
  u64(d, "peak_seq", &p->peak_seq, &ignored);
  u64(d, "live_now_bytes", &p->live_now_bytes, &ignored);
  u64(d, "events_replayed", &p->events_replayed, &ignored);
  auto ex = d.FindMember("exact");
  p->exact = ex != d.MemberEnd() && ex->value.IsBool() && ex->value.GetBool();
  auto w = d.FindMember("why_inexact");
  if (w != d.MemberEnd() && w->value.IsString())
    p->why_inexact.assign(w->value.GetString(), std::min<size_t>(w->value.GetStringLength(), kMaxText));
  return read_sites(d, p, why);
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
    if (!read_device(v, &p, &why)) {
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
