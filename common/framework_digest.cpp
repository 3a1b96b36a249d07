#include "common/framework_digest.h"

#include <rapidjson/document.h>

namespace gpumemrec {

namespace {

constexpr size_t kMaxText = 512;
constexpr size_t kMaxSegments = 1024;

uint64_t u64(const rapidjson::Value& o, const char* key) {
  auto it = o.FindMember(key);
  return it != o.MemberEnd() && it->value.IsUint64() ? it->value.GetUint64() : 0;
}

std::string text(const rapidjson::Value& o, const char* key) {
  auto it = o.FindMember(key);
  if (it == o.MemberEnd() || !it->value.IsString()) return "";
  std::string s(it->value.GetString(), it->value.GetStringLength());
  return s.size() > kMaxText ? s.substr(0, kMaxText) : s;
}

void read_segments(const rapidjson::Value& d, FrameworkDigest* out) {
  auto segs = d.FindMember("mostly_free_segments");
  if (segs == d.MemberEnd() || !segs->value.IsArray()) return;
  for (const auto& s : segs->value.GetArray()) {
    if (out->mostly_free.size() >= kMaxSegments) break;
    if (s.IsObject())
      out->mostly_free.push_back(
          {u64(s, "address"), u64(s, "total_size"), u64(s, "allocated_size"), u64(s, "largest_free_block")});
  }
}

}  // namespace

bool parse_framework_digest(const char* json, size_t len, FrameworkDigest* out, std::string* why) {
  rapidjson::Document d;
  d.Parse<rapidjson::kParseStopWhenDoneFlag>(json, len);
  if (d.HasParseError() || !d.IsObject()) {
    *why = "the digest is not a JSON object";
    return false;
  }
  out->framework = text(d, "framework");
  if (out->framework.empty() || out->framework.size() > 32) {
    *why = "the digest names no framework";
    return false;
  }
  out->error = text(d, "error");
  auto dev = d.FindMember("device");
  out->device = dev != d.MemberEnd() && dev->value.IsInt() ? dev->value.GetInt() : -1;
  out->request_bytes = u64(d, "request_bytes");
  out->device_total = u64(d, "device_total");
  out->device_free = u64(d, "device_free");
  out->reserved_bytes = u64(d, "reserved_bytes");
  out->allocated_bytes = u64(d, "allocated_bytes");
  out->largest_free_block = u64(d, "largest_free_block");
  out->segment_count = u64(d, "segment_count");
  out->mostly_free_count = u64(d, "mostly_free_segment_count");
  out->mostly_free_bytes = u64(d, "mostly_free_bytes");
  read_segments(d, out);
  return true;
}

}  // namespace gpumemrec
