#include "common/framework_digest.h"

#include <rapidjson/document.h>

#include "common/bundle_keys.h"

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
  auto segs = d.FindMember(key::kMostlyFreeSegments);
  if (segs == d.MemberEnd() || !segs->value.IsArray()) return;
  for (const auto& s : segs->value.GetArray()) {
    if (out->mostly_free.size() >= kMaxSegments) break;
    if (s.IsObject())
      out->mostly_free.push_back(
          {u64(s, key::kAddress), u64(s, key::kTotalSize), u64(s, key::kAllocatedSize), u64(s, key::kLargestFreeBlock)});
  }
}

}  // namespace

bool parse_framework_digest(const char* json, size_t len, FrameworkDigest* out, std::string* why) {
  rapidjson::Document d;
  d.Parse<rapidjson::kParseStopWhenDoneFlag | rapidjson::kParseIterativeFlag>(json, len);  // no recursion: any nesting
  if (d.HasParseError() || !d.IsObject()) {
    *why = "the digest is not a JSON object";
    return false;
  }
  out->framework = text(d, key::kFramework);
  if (out->framework.empty() || out->framework.size() > 32) {
    *why = "the digest names no framework";
    return false;
  }
  out->error = text(d, key::kError);
  out->retry_handler = text(d, key::kRetryHandler);
  auto dev = d.FindMember(key::kDevice);
  out->device = dev != d.MemberEnd() && dev->value.IsInt() ? dev->value.GetInt() : -1;
  out->request_bytes = u64(d, key::kRequestBytes);
  out->device_total = u64(d, key::kDeviceTotal);
  out->device_free = u64(d, key::kDeviceFree);
  out->reserved_bytes = u64(d, key::kReservedBytes);
  out->allocated_bytes = u64(d, key::kAllocatedBytes);
  out->largest_free_block = u64(d, key::kLargestFreeBlock);
  out->segment_count = u64(d, key::kSegmentCount);
  out->mostly_free_count = u64(d, key::kMostlyFreeSegmentCount);
  out->mostly_free_bytes = u64(d, key::kMostlyFreeBytes);
  read_segments(d, out);
  return true;
}

}  // namespace gpumemrec
