#include "common/json_records.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <rapidjson/reader.h>

#include "common/block_stream.h"
#include "common/bundle_read_json.h"

namespace gpumemrec::model::read {

const FlatRecord::Member* FlatRecord::find(std::string_view key) const {
  for (size_t i = 0; i < size; ++i)
    if (members[i].key == key) return &members[i];
  return nullptr;
}

namespace {

// depth 0 outside, 1 in the top array, 2 in an object, >2 in a nested value
// (skipped).
struct RecordHandler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, RecordHandler> {
  const std::function<bool(const FlatRecord&)>* on_record;
  FlatRecord rec;
  int depth = 0;
  bool top_not_array = false, entry_not_object = false, stopped = false;

  bool scalar(const char* s, size_t n, ScalarType t) {
    if (depth == 1) {
      entry_not_object = true;
      return false;
    }
    if (depth == 2 && rec.size > 0) {
      FlatRecord::Member& m = rec.members[rec.size - 1];
      m.text.assign(s, n);
      m.type = t;
    }
    return true;
  }
  bool Null() { return scalar("null", 4, ScalarType::kNull); }
  bool Bool(bool b) { return b ? scalar("true", 4, ScalarType::kBool) : scalar("false", 5, ScalarType::kBool); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) { return scalar(s, n, ScalarType::kNumber); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return scalar(s, n, ScalarType::kString); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (depth != 2) return true;
    if (rec.members.size() == rec.size) rec.members.emplace_back();
    FlatRecord::Member& m = rec.members[rec.size++];
    m.key.assign(s, n);
    m.text = "null";
    m.type = ScalarType::kNull;
    return true;
  }
  bool open(bool is_object) {
    if (depth == 0 && is_object) {
      top_not_array = true;
      return false;
    }
    if (depth == 1 && !is_object) {
      entry_not_object = true;
      return false;
    }
    if (depth == 2 && rec.size > 0) {
      // A nested value: the key stays, as null (flat rows only).
      rec.members[rec.size - 1].type = ScalarType::kNull;
    }
    if (depth == 1) rec.size = 0;
    if (++depth > kMaxDepth) return false;
    return true;
  }
  bool close() {
    if (--depth == 1) {
      if (!(*on_record)(rec)) {
        stopped = true;
        return false;
      }
      ++rec.index;
    }
    return true;
  }
  bool StartObject() { return open(true); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool StartArray() { return open(false); }
  bool EndArray(rapidjson::SizeType) {
    --depth;
    return true;
  }
};

}  // namespace

bool stream_records(const std::string& path, uint64_t max_bytes, const char* what,
                    const std::function<bool(const FlatRecord&)>& on_record, ReadError* err) {
  Fd f;
  size_t len = 0;
  if (!open_regular(path, max_bytes, &f.fd, &len, err)) return false;
  BlockStream ss(f.fd, 0, len, is_zstd_path(path));
  RecordHandler h;
  h.on_record = &on_record;
  rapidjson::Reader reader;
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseNumbersAsStringsFlag;
  rapidjson::ParseResult r = reader.Parse<kFlags>(ss, h);
  if (ss.failed) {
    *err = {path, stream_error(ss.zstd_error, errno)};
    return false;
  }
  if (r) return true;
  if (h.stopped) return false;
  if (h.top_not_array) *err = {path, std::string("expected a JSON array at top level")};
  else if (h.entry_not_object) *err = {path, std::string(what) + " #" + std::to_string(h.rec.index) + " is not a JSON object"};
  else if (h.depth > kMaxDepth) *err = {path, std::string(what) + " #" + std::to_string(h.rec.index) + " nests too deep"};
  else *err = {path, json_error(r.Code(), r.Offset(), len)};
  return false;
}

}  // namespace gpumemrec::model::read
