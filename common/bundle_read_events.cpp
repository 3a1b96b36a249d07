// events.json: streamed through the SAX reader in fixed-size blocks straight
// into the compact EventVector, interning the few distinct strings: memory is
// the model plus a few MiB, never a copy of the file (up to millions of
// events); a big file is parsed on two threads.
#include "common/bundle_read_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <thread>

#include <rapidjson/reader.h>

#include "common/block_stream.h"
#include "common/bundle_read_json.h"
#include "common/bundle_schema.h"

namespace gpumemrec::model::read {

namespace {

// events.json (SAX) -----------------------------------------------------------

enum Field : int {
  F_NONE = -1,
  F_SEQ, F_TIMESTAMP, F_EVENT_TYPE, F_MEMORY_ALLOCATED, F_MEMORY_RESERVED, F_MEMORY_CHANGE,
  F_DEVICE_ID, F_CONTEXT, F_BACKEND, F_API, F_MEMORY_TYPE, F_ADDRESS, F_SIZE, F_RESULT,
  F_THREAD_ID, F_STACK_ID, F_DURATION_NS, F_STREAM,
};

// The keys the model keeps, in Field order (the schema's names).
constexpr const char* kFieldNames[] = {
    key::kSeq, key::kTimestamp, key::kEventType, key::kMemoryAllocated, key::kMemoryReserved,
    key::kMemoryChange, key::kDeviceId, key::kContext, key::kBackend, key::kApi, key::kMemoryType,
    key::kAddress, key::kSize, key::kResult, key::kThreadId, key::kStackId, key::kDurationNs, key::kStream,
};
static_assert(sizeof(kFieldNames) / sizeof(kFieldNames[0]) == F_STREAM + 1, "one name per Field");

constexpr size_t name_length(const char* s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}

// The fields by key length, each list ending with F_NONE: field_of compares
// a key with the few names of its length only (at most three share one).
constexpr size_t kMaxFieldName = 24, kPerLength = 4;
struct FieldsByLength {
  Field at[kMaxFieldName + 1][kPerLength] = {};
};
constexpr FieldsByLength make_fields_by_length() {
  FieldsByLength t;
  for (auto& row : t.at)
    for (Field& f : row) f = F_NONE;
  for (int f = 0; f <= F_STREAM; ++f) {
    Field* row = t.at[name_length(kFieldNames[f])];
    size_t i = 0;
    while (row[i] != F_NONE) ++i;
    row[i] = Field(f);  // past kPerLength - 1 names of one length: not a constant expression
  }
  return t;
}
constexpr FieldsByLength kFieldsByLength = make_fields_by_length();

Field field_of(const char* s, size_t n) {
  if (n > kMaxFieldName) return F_NONE;
  for (const Field* f = kFieldsByLength.at[n]; *f != F_NONE; ++f)
    if (memcmp(s, kFieldNames[*f], n) == 0) return *f;
  return F_NONE;
}

struct EventHandler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, EventHandler> {
  StringTable* strings;
  EventVector* out;
  BlockStream* stream;
  size_t total_len;
  const ReadOptions* opts;
  int depth = 0;         // 0 outside, 1 in top array, 2 in an event object, >2 nested unknown
  Field field = F_NONE;  // the key just read (depth 2)
  Event cur;
  bool has_reserved = false;  // left out by the shim: memory_allocated then
  std::string error;  // set when we abort for a type error
  bool top_not_array = false;
  bool entry_not_object = false;

  bool type_error(const char* expected) {
    error = "event #" + std::to_string(out->size()) + ": " + key_text(kFieldNames[field]) + " is not " + expected;
    return false;
  }
  bool set_device(int64_t v, bool too_big) {
    if (too_big || v < -1 || v > kMaxDeviceId) {
      error = "event #" + std::to_string(out->size()) + ": " + key::kDeviceId + " " +
              (too_big ? std::string("above 2^63") : std::to_string(v)) + " out of range (-1.." +
              std::to_string(kMaxDeviceId) + ")";
      return false;
    }
    cur.device_id = static_cast<int32_t>(v);
    return true;
  }
  bool nest() {
    if (++depth <= kMaxDepth) return true;
    error = "event #" + std::to_string(out->size()) + " nests deeper than " + std::to_string(kMaxDepth) + " levels";
    return false;
  }
  bool set_u(uint64_t v) {
    switch (field) {
      case F_SEQ: cur.seq = v; break;
      case F_TIMESTAMP: cur.timestamp = static_cast<double>(v); break;
      case F_MEMORY_ALLOCATED: cur.memory_allocated = v; break;
      case F_MEMORY_RESERVED: cur.memory_reserved = v, has_reserved = true; break;
      case F_MEMORY_CHANGE: cur.memory_change = static_cast<int64_t>(v); break;
      case F_DEVICE_ID: return set_device(static_cast<int64_t>(v), v > uint64_t(INT64_MAX));
      case F_ADDRESS: cur.address = v; break;
      case F_SIZE: cur.size = v; break;
      case F_RESULT: cur.result = static_cast<int64_t>(v); break;
      case F_THREAD_ID: cur.thread_id = static_cast<uint32_t>(v); break;
      case F_STACK_ID: cur.stack_id = v; break;
      case F_DURATION_NS: cur.duration_ns = v; break;
      case F_STREAM: cur.stream = v; break;
      case F_NONE: break;
      default: return type_error("a string");
    }
    return true;
  }
  bool set_i(int64_t v) {
    switch (field) {
      case F_MEMORY_CHANGE: cur.memory_change = v; break;
      case F_DEVICE_ID: return set_device(v, false);
      case F_RESULT: cur.result = v; break;
      case F_TIMESTAMP: cur.timestamp = static_cast<double>(v); break;
      default: return set_u(static_cast<uint64_t>(v));
    }
    return true;
  }

  bool Null() { return depth >= 2 ? true : bad_entry(); }
  bool Bool(bool) { return depth >= 2 ? true : bad_entry(); }
  bool Int(int i) { return depth > 2 ? true : depth == 2 ? set_i(i) : bad_entry(); }
  bool Uint(unsigned u) { return depth > 2 ? true : depth == 2 ? set_u(u) : bad_entry(); }
  bool Int64(int64_t i) { return depth > 2 ? true : depth == 2 ? set_i(i) : bad_entry(); }
  bool Uint64(uint64_t u) { return depth > 2 ? true : depth == 2 ? set_u(u) : bad_entry(); }
  bool Double(double d) {
    if (depth > 2) return true;
    if (depth != 2) return bad_entry();
    if (field == F_TIMESTAMP) {
      cur.timestamp = d;
      return true;
    }
    if (field == F_MEMORY_CHANGE || field == F_DEVICE_ID || field == F_RESULT) return set_i(double_to_i64(d));
    return set_u(double_to_u64(d));
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    if (depth > 2) return true;
    if (depth != 2) return bad_entry();
    std::string_view v(s, n);
    switch (field) {
      case F_EVENT_TYPE:
        cur.event_type = strings->intern(v);
        cur.kind = event_kind_from_name(v);
        break;
      case F_API: cur.api = strings->intern(v); break;
      case F_CONTEXT: cur.context = strings->intern(v); break;
      case F_BACKEND: cur.backend = strings->intern(v); break;
      case F_MEMORY_TYPE:
        cur.memory_type = strings->intern(v);
        cur.mem_kind = memory_type_from_name(v);
        break;
      case F_NONE: break;
      default: return type_error("a number");
    }
    return true;
  }
  bool bad_entry() {
    if (depth == 0) top_not_array = true;
    else entry_not_object = true;
    return false;
  }
  bool StartObject() {
    if (depth == 1) {
      cur = Event();
      has_reserved = false;
      depth = 2;
      field = F_NONE;
      return true;
    }
    if (depth == 0) return bad_entry();
    return nest();
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (depth == 2) field = field_of(s, n);
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    if (depth == 2) {
      if (!has_reserved) cur.memory_reserved = cur.memory_allocated;  // docs/bundle-format.md, "Keys left out"
      out->push_back(cur);
      depth = 1;
      if ((out->size() & 0xFFFF) == 0 && opts && opts->progress)
        opts->progress(file::kEvents, std::min(1.0, static_cast<double>(stream->Tell()) / total_len));  // compressed: Tell() is past the size
      return true;
    }
    --depth;
    return true;
  }
  bool StartArray() {
    if (depth == 0) {
      depth = 1;
      return true;
    }
    if (depth == 1) return bad_entry();
    return nest();
  }
  bool EndArray(rapidjson::SizeType) {
    --depth;
    return true;
  }
};

constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag;

// Events to reserve for `bytes` of events.json (about 350 bytes per event
// as the shim writes them; capped so a huge hostile file reserves no more
// than the vector would reach by doubling).
size_t event_guess(size_t bytes) { return std::min<size_t>(bytes / 200, size_t(1) << 22) + 16; }

// Sequential parse of the whole file (also the fallback of the parallel one,
// and the one that words the precise error).
bool read_events_sequential(const std::string& path, int fd, size_t len, const ReadOptions& opts, Bundle* b,
                            ReadError* err) {
  b->events.clear();
  b->events.reserve(event_guess(len));  // generous: unused capacity is never touched
  BlockStream ss(fd, 0, len, is_zstd_path(path));
  EventHandler h;
  h.strings = &b->strings;
  h.out = &b->events;
  h.stream = &ss;
  h.total_len = len;
  h.opts = &opts;
  rapidjson::Reader reader;
  rapidjson::ParseResult r = reader.Parse<kParseFlags>(ss, h);
  if (ss.failed) {
    *err = {path, stream_error(ss.zstd_error, errno)};
    return false;
  }
  if (!r) {
    if (!h.error.empty()) *err = {path, h.error};
    else if (h.top_not_array) *err = {path, "expected a JSON array of events at top level"};
    else if (h.entry_not_object)
      *err = {path, "event #" + std::to_string(b->events.size()) + " is not a JSON object"};
    else *err = {path, json_error(r.Code(), r.Offset(), len)};
    return false;
  }
  if (opts.progress) opts.progress(file::kEvents, 1.0);
  return true;
}

// Parallel parse of a big events.json: the array is cut in two at an event
// boundary and each half parsed object by object on its own thread, each
// with its own block buffer. Any doubt (a cut that is not a real boundary,
// any parse error) returns false and the caller re-reads the file
// sequentially, which also produces the precise error message.
struct Chunk {
  EventVector* events;
  StringTable* strings;
  size_t end = 0;        // offset where parsing stopped
  bool ok = false;
  bool hit_end = false;  // reached the closing ']'
};

inline bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

void parse_chunk(int fd, size_t start, size_t stop, size_t total, const ReadOptions* opts, Chunk* c) {
  BlockStream ss(fd, start, total);
  EventHandler h;
  h.strings = c->strings;
  h.out = c->events;
  h.stream = &ss;
  h.total_len = stop;  // the first half reports progress up to the cut
  h.opts = opts;
  h.depth = 1;  // inside the top-level array
  rapidjson::Reader reader;
  for (;;) {
    if (ss.Peek() != '{') return;
    if (!reader.Parse<kParseFlags | rapidjson::kParseStopWhenDoneFlag>(ss, h)) return;
    while (is_ws(ss.Peek())) ss.Take();
    char ch = ss.Peek();
    if (ch == ']') {
      ss.Take();
      while (is_ws(ss.Peek())) ss.Take();
      c->hit_end = ss.Peek() == '\0' && !ss.failed;
      c->ok = c->hit_end;
      c->end = start + ss.Tell();
      return;
    }
    if (ch != ',') return;
    ss.Take();
    while (is_ws(ss.Peek())) ss.Take();
    size_t pos = start + ss.Tell();
    if (pos >= stop) {
      c->end = pos;
      c->ok = true;
      return;
    }
  }
}

// Offset of the first event ('{' after '[') and of an event boundary near
// the middle ('}' ws* ',' ws* '{'), or false.
bool find_cut(int fd, size_t len, size_t* first, size_t* split) {
  std::vector<char> w(std::min<size_t>(len, size_t(8) << 20));
  ssize_t n = pread_full(fd, w.data(), std::min<size_t>(w.size(), 4096), 0);
  size_t i = 0;
  while (n > 0 && i < size_t(n) && is_ws(w[i])) ++i;
  if (n <= 0 || i >= size_t(n) || w[i] != '[') return false;
  ++i;
  while (i < size_t(n) && is_ws(w[i])) ++i;
  if (i >= size_t(n) || w[i] != '{') return false;
  *first = i;
  size_t base = len / 2;
  n = pread_full(fd, w.data(), w.size(), base);
  for (size_t p = 0; n > 0 && p + 1 < size_t(n); ++p) {
    if (w[p] != '}') continue;
    size_t q = p + 1;
    while (q < size_t(n) && is_ws(w[q])) ++q;
    if (q >= size_t(n) || w[q] != ',') continue;
    ++q;
    while (q < size_t(n) && is_ws(w[q])) ++q;
    if (q < size_t(n) && w[q] == '{') {
      *split = base + q;
      return true;
    }
  }
  return false;
}

bool read_events_parallel(int fd, size_t len, const ReadOptions& opts, Bundle* b) {
  size_t first = 0, split = 0;
  if (!find_cut(fd, len, &first, &split)) return false;
  b->events.clear();
  b->events.reserve(event_guess(len));
  EventVector second;
  second.reserve(event_guess(len - split));
  StringTable second_strings;
  Chunk c1{&b->events, &b->strings};
  Chunk c2{&second, &second_strings};
  std::thread t([&] { parse_chunk(fd, split, SIZE_MAX, len, nullptr, &c2); });
  parse_chunk(fd, first, split, len, &opts, &c1);
  t.join();
  if (!(c1.ok && !c1.hit_end && c1.end == split && c2.ok && c2.hit_end)) {
    b->events.clear();
    return false;
  }
  // Merge: remap the second half's interned strings.
  std::vector<uint16_t> remap(second_strings.size());
  for (size_t k = 0; k < remap.size(); ++k) remap[k] = b->strings.intern(second_strings.str(static_cast<uint16_t>(k)));
  for (Event& e : second) {
    e.event_type = remap[e.event_type];
    e.api = remap[e.api];
    e.context = remap[e.context];
    e.backend = remap[e.backend];
    e.memory_type = remap[e.memory_type];
  }
  // Append in slices, dropping each slice's pages from `second` once copied:
  // the merge then costs the final array plus one slice, not two halves.
  constexpr size_t kSlice = (size_t(4) << 20) / sizeof(Event);
  for (size_t at = 0; at < second.size(); at += kSlice) {
    size_t n = std::min(kSlice, second.size() - at);
    b->events.insert(b->events.end(), second.begin() + static_cast<std::ptrdiff_t>(at),
                     second.begin() + static_cast<std::ptrdiff_t>(at + n));
    big_discard(second.data(), second.capacity() * sizeof(Event), (at + n) * sizeof(Event));
  }
  if (opts.progress) opts.progress(file::kEvents, 1.0);
  return true;
}

}  // namespace

bool read_events(const std::string& path, const ReadOptions& opts, Bundle* b, ReadError* err) {
  Fd f;
  size_t len = 0;
  if (!open_regular(path, kMaxEventsFileBytes, &f.fd, &len, err)) return false;
  // A compressed file is read from its start only (no cut in the middle).
  if (opts.threads != 1 && len > (16 << 20) && !is_zstd_path(path) && std::thread::hardware_concurrency() > 1) {
    if (read_events_parallel(f.fd, len, opts, b)) return true;
    b->events.clear();
    b->strings = StringTable();
  }
  return read_events_sequential(path, f.fd, len, opts, b, err);
}


}  // namespace gpumemrec::model::read
