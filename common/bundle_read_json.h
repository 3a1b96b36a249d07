// The reader's JSON plumbing, shared by the readers of each bundle file
// (common/bundle_read_files.h): opening only regular files of bounded size,
// an in-situ DOM parse with one-line errors, and typed field access (Fields)
// that names the file, the entry and the key at fault.
//
// Hostile input (docs/reliability.md, "The tools on bad bundles"): only
// regular files are read (a FIFO would block, /dev/zero never ends), never
// more than their size at open nor more than a per-file maximum; both parsers
// run iteratively (kParseIterativeFlag: no recursion, so 300,000 nested
// brackets cannot overflow the stack) and events nest at most kMaxDepth
// levels; device ids outside [-1, kMaxDeviceId] are refused, since the tools
// index per-device tables by them. Optional fields follow one rule: absent or
// null is the default, a wrong type is an error.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "common/bundle_reader.h"

namespace gpumemrec::model::read {

using rapidjson::Value;

// Doubles from untrusted JSON: saturate instead of the undefined behaviour of
// an out-of-range floating-to-integer conversion (found by the fuzzer).
inline uint64_t double_to_u64(double d) {
  if (!(d > 0)) return 0;
  if (d >= 18446744073709551615.0) return UINT64_MAX;
  return static_cast<uint64_t>(d);
}
inline int64_t double_to_i64(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(d);
}

// Largest file each parser accepts: the DOM files cost a few times their size
// in memory, events.json is streamed (its model costs about a third of it).
constexpr uint64_t kMaxDomFileBytes = uint64_t(2) << 30;
constexpr uint64_t kMaxEventsFileBytes = uint64_t(64) << 30;
// Nesting allowed inside an event (objects we do not know are skipped).
constexpr int kMaxDepth = 64;
// Device ordinals the tools accept (CUDA and HIP number devices from 0; -1 is
// "unknown"); per-device tables are indexed by them.
constexpr int64_t kMaxDeviceId = 4095;


std::string join_path(const std::string& dir, const char* name);
// dir/name, or dir/name.zst when only that one is there (GPUMEMREC_COMPRESS).
std::string bundle_file(const std::string& dir, const char* name);
bool file_exists(const std::string& p);
// Opens `path` if it is a regular file of at most `max_bytes` (symlinks are
// followed, then judged by what they point at). O_NONBLOCK: opening a FIFO
// must not wait for a writer. On success *size is the size to read.
bool open_regular(const std::string& path, uint64_t max_bytes, int* fd_out, size_t* size, ReadError* err);
// Reads up to `want` bytes at `offset`; fewer only at end of file.
ssize_t pread_full(int fd, char* buf, size_t want, uint64_t offset);
std::string json_error(rapidjson::ParseErrorCode code, size_t offset, size_t len);
// The error of a stream that stopped (BlockStream's `failed`): its zstd
// error, else errno's.
std::string stream_error(const std::string& zstd_error, int err);
// The whole (small) file parsed in situ into *doc (which points into *buf).
bool parse_dom(const std::string& path, std::vector<char>* buf, rapidjson::Document* doc, ReadError* err);
bool expect_object(const std::string& path, const rapidjson::Document& d, ReadError* err);
bool expect_array(const std::string& path, const rapidjson::Document& d, ReadError* err);
// "key 'name'", for error messages.
inline std::string key_text(const char* key) { return std::string("key '") + key + "'"; }
// Any JSON value as text (custom_metadata, env).
std::string value_text(const Value& v);

// Typed field access with one-line errors: absent or null leaves *out as it
// is; a wrong type fails with "<where>key '<key>' is not <expected>".
struct Fields {
  const std::string& file;
  std::string where;  // e.g. "allocation #3: "
  ReadError* err;

  bool fail(const char* key, const char* expected) {
    *err = {file, where + key_text(key) + " is not " + expected};
    return false;
  }
  const Value* get(const Value& o, const char* key) {
    auto it = o.FindMember(key);
    if (it == o.MemberEnd() || it->value.IsNull()) return nullptr;
    return &it->value;
  }
  bool u64(const Value& o, const char* key, uint64_t* out) {
    const Value* v = get(o, key);
    if (!v) return true;
    if (v->IsUint64()) *out = v->GetUint64();
    else if (v->IsInt64()) *out = static_cast<uint64_t>(v->GetInt64());
    else if (v->IsDouble()) *out = double_to_u64(v->GetDouble());
    else return fail(key, "a number");
    return true;
  }
  bool opt_u64(const Value& o, const char* key, std::optional<uint64_t>* out) {
    const Value* v = get(o, key);
    if (!v) return true;
    uint64_t x = 0;
    if (!u64(o, key, &x)) return false;
    *out = x;
    return true;
  }
  bool i64(const Value& o, const char* key, int64_t* out) {
    const Value* v = get(o, key);
    if (!v) return true;
    if (v->IsInt64()) *out = v->GetInt64();
    else if (v->IsUint64()) *out = static_cast<int64_t>(v->GetUint64());
    else if (v->IsDouble()) *out = double_to_i64(v->GetDouble());
    else return fail(key, "a number");
    return true;
  }
  template <typename T>
  bool num(const Value& o, const char* key, T* out) {
    int64_t x = static_cast<int64_t>(*out);
    if (!i64(o, key, &x)) return false;
    *out = static_cast<T>(x);
    return true;
  }
  bool device(const Value& o, const char* key, int32_t* out) {
    const Value* v = get(o, key);
    if (!v) return true;
    int64_t x = 0;
    if (!i64(o, key, &x)) return false;
    if ((v->IsUint64() && v->GetUint64() > uint64_t(INT64_MAX)) || x < -1 || x > kMaxDeviceId) {
      *err = {file, where + key_text(key) + " out of range (-1.." + std::to_string(kMaxDeviceId) + ")"};
      return false;
    }
    *out = static_cast<int32_t>(x);
    return true;
  }
  bool dbl(const Value& o, const char* key, double* out) {
    const Value* v = get(o, key);
    if (!v) return true;
    if (!v->IsNumber()) return fail(key, "a number");
    *out = v->GetDouble();
    return true;
  }
  bool str(const Value& o, const char* key, std::string* out) {
    const Value* v = get(o, key);
    if (!v) return true;
    if (!v->IsString()) return fail(key, "a string");
    out->assign(v->GetString(), v->GetStringLength());
    return true;
  }
};


}  // namespace gpumemrec::model::read
