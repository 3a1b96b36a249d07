#include "shim/dump/capture/framework_report.h"

#include <rapidjson/document.h>

#include <new>

#include "shim/base/spinlock.h"

namespace gpumemrec {

namespace {

SpinLock g_lock;
std::shared_ptr<const FrameworkReport> g_held;

uint64_t uint_of(const rapidjson::Value& o, const char* key) {
  auto it = o.FindMember(key);
  return it != o.MemberEnd() && it->value.IsUint64() ? it->value.GetUint64() : 0;
}

std::string string_of(const rapidjson::Value& o, const char* key, size_t max) {
  auto it = o.FindMember(key);
  if (it == o.MemberEnd() || !it->value.IsString()) return "";
  std::string s(it->value.GetString(), it->value.GetStringLength());
  return s.size() > max ? s.substr(0, max) : s;
}

}  // namespace

bool framework_state_name_ok(const std::string& name) {
  return name == "framework_state.pickle" || name == "framework_memory_profile.pb.gz";
}

bool parse_framework_digest(const char* json, size_t len, FrameworkReport* out, std::string* why) {
  rapidjson::Document d;
  d.Parse<rapidjson::kParseStopWhenDoneFlag>(json, len);
  if (d.HasParseError() || !d.IsObject()) {
    *why = "the digest is not a JSON object";
    return false;
  }
  out->framework = string_of(d, "framework", 32);
  if (out->framework.empty()) {
    *why = "the digest names no framework";
    return false;
  }
  auto dev = d.FindMember("device");
  out->device = dev != d.MemberEnd() && dev->value.IsInt() ? dev->value.GetInt() : -1;
  out->request_bytes = uint_of(d, "request_bytes");
  out->device_total = uint_of(d, "device_total");
  out->device_free = uint_of(d, "device_free");
  out->reserved_bytes = uint_of(d, "reserved_bytes");
  out->allocated_bytes = uint_of(d, "allocated_bytes");
  out->largest_free_block = uint_of(d, "largest_free_block");
  out->mostly_free_segments = uint_of(d, "mostly_free_segment_count");
  out->mostly_free_bytes = uint_of(d, "mostly_free_bytes");
  out->error = string_of(d, "error", 512);
  out->digest.assign(json, len);
  return true;
}

void framework_report_put(std::shared_ptr<const FrameworkReport> r) {
  {
    SpinGuard g(g_lock);
    g_held.swap(r);
  }
  r.reset();  // the replaced report, freed outside the lock
}

std::shared_ptr<const FrameworkReport> framework_report_take(uint64_t episode) {
  std::shared_ptr<const FrameworkReport> r;
  SpinGuard g(g_lock);
  if (g_held && g_held->episode == episode) r.swap(g_held);
  return r;
}

void framework_report_atfork_child() {
  // A report belongs to the parent's bundle; the lock may have been held by
  // a thread that does not exist here.
  new (&g_lock) SpinLock();
  g_held.reset();
}

}  // namespace gpumemrec
