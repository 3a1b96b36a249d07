// Bundle loading. Small files use an in-situ RapidJSON DOM; events.json (up
// to millions of entries) is parsed with the SAX reader straight into
// std::vector<Event>, interning the few distinct strings.
#include "common/bundle_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

namespace gpumemrec::model {
namespace {

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


using rapidjson::Value;

std::string join_path(const std::string& dir, const char* name) {
  if (!dir.empty() && dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

bool file_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

bool read_file(const std::string& path, std::vector<char>* buf, ReadError* err) {
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) {
    *err = {path, errno == ENOENT ? "missing file" : std::string("cannot open: ") + strerror(errno)};
    return false;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    *err = {path, "is a directory, expected a JSON file"};
    return false;
  }
  buf->clear();
  size_t cap = st.st_size > 0 ? static_cast<size_t>(st.st_size) : 0;
  buf->resize(cap + 1);
  size_t n = 0;
  for (;;) {
    if (n == buf->size() - 1) buf->resize(buf->size() * 2 + 4096);
    size_t got = fread(buf->data() + n, 1, buf->size() - 1 - n, f);
    if (got == 0) break;
    n += got;
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    *err = {path, "read error"};
    return false;
  }
  buf->resize(n + 1);
  (*buf)[n] = '\0';
  if (n == 0) {
    *err = {path, "empty file (truncated?)"};
    return false;
  }
  return true;
}

std::string json_error(rapidjson::ParseErrorCode code, size_t offset, size_t len) {
  if (offset >= len || code == rapidjson::kParseErrorDocumentEmpty) {
    return "truncated JSON: unexpected end of file at byte " + std::to_string(offset) + " (" +
           rapidjson::GetParseError_En(code) + ")";
  }
  return "invalid JSON at byte " + std::to_string(offset) + ": " + rapidjson::GetParseError_En(code);
}

bool parse_dom(const std::string& path, std::vector<char>* buf, rapidjson::Document* doc,
               ReadError* err) {
  if (!read_file(path, buf, err)) return false;
  size_t len = buf->size() - 1;
  doc->ParseInsitu(buf->data());
  if (doc->HasParseError()) {
    *err = {path, json_error(doc->GetParseError(), doc->GetErrorOffset(), len)};
    return false;
  }
  return true;
}

// Typed field access with one-line errors ------------------------------------

struct Fields {
  const std::string& file;
  std::string where;  // e.g. "allocation #3: "
  ReadError* err;

  bool fail(const char* key, const char* expected) {
    *err = {file, where + "key '" + key + "' is not " + expected};
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

std::string value_text(const Value& v) {
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  if (v.IsUint64()) return std::to_string(v.GetUint64());
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsDouble()) return std::to_string(v.GetDouble());
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsNull()) return "null";
  return "<complex>";
}

bool expect_object(const std::string& path, const rapidjson::Document& d, ReadError* err) {
  if (!d.IsObject()) {
    *err = {path, "expected a JSON object at top level"};
    return false;
  }
  return true;
}
bool expect_array(const std::string& path, const rapidjson::Document& d, ReadError* err) {
  if (!d.IsArray()) {
    *err = {path, "expected a JSON array at top level"};
    return false;
  }
  return true;
}

// manifest.json ---------------------------------------------------------------

bool read_manifest(const std::string& path, Manifest* m, ReadError* err) {
  std::vector<char> buf;
  rapidjson::Document d;
  if (!parse_dom(path, &buf, &d, err) || !expect_object(path, d, err)) return false;
  Fields f{path, "", err};
  auto sv = d.FindMember("schema_version");
  if (sv == d.MemberEnd()) {
    *err = {path, "not a gpumemrec manifest: no schema_version"};
    return false;
  }
  if (!sv->value.IsInt64()) {
    *err = {path, "schema_version is not an integer"};
    return false;
  }
  m->schema_version = sv->value.GetInt64();
  if (m->schema_version != kBundleSchemaVersion) {
    *err = {path, "unsupported schema_version " + std::to_string(m->schema_version) +
                      " (this gpumemrec reads version " + std::to_string(kBundleSchemaVersion) + ")"};
    return false;
  }
  if (!f.str(d, "bundle_name", &m->bundle_name) || !f.str(d, "created_at_utc", &m->created_at_utc) ||
      !f.str(d, "reason", &m->reason) || !f.str(d, "backend", &m->backend) ||
      !f.u64(d, "event_count", &m->event_count) || !f.str(d, "generator", &m->generator) ||
      !f.i64(d, "pid", &m->pid))
    return false;
  auto files = d.FindMember("files");
  if (files != d.MemberEnd() && files->value.IsArray()) {
    for (auto& v : files->value.GetArray())
      if (v.IsString()) m->files.emplace_back(v.GetString(), v.GetStringLength());
  }
  return true;
}

// metadata.json ---------------------------------------------------------------

bool read_metadata(const std::string& path, Metadata* m, ReadError* err) {
  std::vector<char> buf;
  rapidjson::Document d;
  if (!parse_dom(path, &buf, &d, err) || !expect_object(path, d, err)) return false;
  Fields f{path, "", err};
  if (!f.str(d, "reason", &m->reason) || !f.str(d, "api", &m->api) ||
      !f.i64(d, "error_code", &m->error_code) || !f.str(d, "error_name", &m->error_name) ||
      !f.u64(d, "requested_bytes", &m->requested_bytes) || !f.num(d, "device_id", &m->device_id) ||
      !f.opt_u64(d, "device_free_bytes", &m->device_free_bytes) ||
      !f.opt_u64(d, "device_total_bytes", &m->device_total_bytes) ||
      !f.u64(d, "live_bytes", &m->live_bytes) || !f.u64(d, "live_allocations", &m->live_allocations) ||
      !f.num(d, "thread_id", &m->thread_id) || !f.u64(d, "stack_id", &m->stack_id) ||
      !f.str(d, "context", &m->context) || !f.str(d, "backend", &m->backend) ||
      !f.u64(d, "captured_event_count", &m->captured_event_count) ||
      !f.u64(d, "total_event_count", &m->total_event_count) ||
      !f.u64(d, "failed_calls_before_dump", &m->failed_calls_before_dump) ||
      !f.dbl(d, "timestamp", &m->timestamp))
    return false;
  auto lb = d.FindMember("live_bytes_by_device");
  if (lb != d.MemberEnd() && lb->value.IsObject()) {
    for (auto& kv : lb->value.GetObject()) {
      int32_t dev = static_cast<int32_t>(strtol(kv.name.GetString(), nullptr, 10));
      if (kv.value.IsUint64()) m->live_bytes_by_device[dev] = kv.value.GetUint64();
      else if (kv.value.IsNumber()) m->live_bytes_by_device[dev] = double_to_u64(kv.value.GetDouble());
    }
  }
  auto cm = d.FindMember("custom_metadata");
  if (cm != d.MemberEnd() && cm->value.IsObject()) {
    for (auto& kv : cm->value.GetObject()) {
      std::string key(kv.name.GetString(), kv.name.GetStringLength());
      std::string val = value_text(kv.value);
      if (key == "rank") {
        if (kv.value.IsInt64()) m->rank = kv.value.GetInt64();
        else if (kv.value.IsString()) {
          char* end = nullptr;
          long long r = strtoll(val.c_str(), &end, 10);
          if (end && *end == '\0' && !val.empty()) m->rank = r;
        }
      } else if (key == "hostname") {
        m->hostname = val;
      }
      m->custom_metadata.emplace_back(std::move(key), std::move(val));
    }
  }
  return true;
}

// events.json (SAX) -----------------------------------------------------------

enum Field : int {
  F_NONE = -1,
  F_SEQ, F_TIMESTAMP, F_EVENT_TYPE, F_MEMORY_ALLOCATED, F_MEMORY_RESERVED, F_MEMORY_CHANGE,
  F_DEVICE_ID, F_CONTEXT, F_BACKEND, F_API, F_MEMORY_TYPE, F_ADDRESS, F_SIZE, F_RESULT,
  F_THREAD_ID, F_STACK_ID, F_DURATION_NS, F_STREAM,
};

const char* const kFieldNames[] = {
    "seq", "timestamp", "event_type", "memory_allocated", "memory_reserved", "memory_change",
    "device_id", "context", "backend", "api", "memory_type", "address", "size", "result",
    "thread_id", "stack_id", "duration_ns", "stream",
};

inline bool eq(const char* s, const char* lit, size_t n) { return memcmp(s, lit, n) == 0; }

Field field_of(const char* s, size_t n) {
  switch (n) {
    case 3: return eq(s, "seq", 3) ? F_SEQ : eq(s, "api", 3) ? F_API : F_NONE;
    case 4: return eq(s, "size", 4) ? F_SIZE : F_NONE;
    case 6: return eq(s, "result", 6) ? F_RESULT : eq(s, "stream", 6) ? F_STREAM : F_NONE;
    case 7:
      return eq(s, "context", 7) ? F_CONTEXT : eq(s, "backend", 7) ? F_BACKEND
             : eq(s, "address", 7) ? F_ADDRESS : F_NONE;
    case 8: return eq(s, "stack_id", 8) ? F_STACK_ID : F_NONE;
    case 9:
      return eq(s, "timestamp", 9) ? F_TIMESTAMP : eq(s, "device_id", 9) ? F_DEVICE_ID
             : eq(s, "thread_id", 9) ? F_THREAD_ID : F_NONE;
    case 10: return eq(s, "event_type", 10) ? F_EVENT_TYPE : F_NONE;
    case 11: return eq(s, "memory_type", 11) ? F_MEMORY_TYPE : eq(s, "duration_ns", 11) ? F_DURATION_NS : F_NONE;
    case 13: return eq(s, "memory_change", 13) ? F_MEMORY_CHANGE : F_NONE;
    case 15: return eq(s, "memory_reserved", 15) ? F_MEMORY_RESERVED : F_NONE;
    case 16: return eq(s, "memory_allocated", 16) ? F_MEMORY_ALLOCATED : F_NONE;
    default: return F_NONE;
  }
}

struct EventHandler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, EventHandler> {
  StringTable* strings;
  EventVector* out;
  rapidjson::InsituStringStream* stream;
  size_t total_len;
  const ReadOptions* opts;
  int depth = 0;         // 0 outside, 1 in top array, 2 in an event object, >2 nested unknown
  Field field = F_NONE;  // the key just read (depth 2)
  Event cur;
  std::string error;  // set when we abort for a type error
  bool top_not_array = false;
  bool entry_not_object = false;

  bool type_error(const char* expected) {
    error = "event #" + std::to_string(out->size()) + ": key '" + kFieldNames[field] + "' is not " + expected;
    return false;
  }
  bool set_u(uint64_t v) {
    switch (field) {
      case F_SEQ: cur.seq = v; break;
      case F_TIMESTAMP: cur.timestamp = static_cast<double>(v); break;
      case F_MEMORY_ALLOCATED: cur.memory_allocated = v; break;
      case F_MEMORY_RESERVED: cur.memory_reserved = v; break;
      case F_MEMORY_CHANGE: cur.memory_change = static_cast<int64_t>(v); break;
      case F_DEVICE_ID: cur.device_id = static_cast<int32_t>(v); break;
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
      case F_DEVICE_ID: cur.device_id = static_cast<int32_t>(v); break;
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
      depth = 2;
      field = F_NONE;
      return true;
    }
    if (depth == 0) return bad_entry();
    ++depth;
    return true;
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (depth == 2) field = field_of(s, n);
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    if (depth == 2) {
      out->push_back(cur);
      depth = 1;
      if ((out->size() & 0xFFFF) == 0 && opts && opts->progress)
        opts->progress("events.json", static_cast<double>(stream->Tell()) / total_len);
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
    ++depth;
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    --depth;
    return true;
  }
};

// The whole file in one buffer (huge pages when big), NUL-terminated so it
// can be parsed in situ.
struct FileBuffer {
  char* data = nullptr;
  size_t size = 0;
  size_t cap = 0;
  ~FileBuffer() { big_free(data, cap); }
};

bool slurp(const std::string& path, FileBuffer* fb, ReadError* err) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = {path, errno == ENOENT ? "missing file" : std::string("cannot open: ") + strerror(errno)};
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    close(fd);
    *err = {path, "is a directory, expected a JSON file"};
    return false;
  }
  size_t want = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0;
  fb->cap = want + 1 + (1 << 16);
  fb->data = static_cast<char*>(big_alloc(fb->cap));
  for (;;) {
    if (fb->size + 1 == fb->cap) {  // grew while we read, or not a regular file
      size_t ncap = fb->cap * 2;
      char* n = static_cast<char*>(big_alloc(ncap));
      memcpy(n, fb->data, fb->size);
      big_free(fb->data, fb->cap);
      fb->data = n;
      fb->cap = ncap;
    }
    ssize_t got = read(fd, fb->data + fb->size, fb->cap - 1 - fb->size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      close(fd);
      *err = {path, std::string("read error: ") + strerror(errno)};
      return false;
    }
    if (got == 0) break;
    fb->size += static_cast<size_t>(got);
  }
  close(fd);
  fb->data[fb->size] = '\0';
  if (fb->size == 0) {
    *err = {path, "empty file (truncated?)"};
    return false;
  }
  return true;
}

bool read_events_sequential(const std::string& path, const ReadOptions& opts, Bundle* b, ReadError* err) {
  FileBuffer fb;
  if (!slurp(path, &fb, err)) return false;
  size_t len = fb.size;
  b->events.clear();
  b->events.reserve(len / 200 + 16);  // generous: unused capacity is never touched
  rapidjson::InsituStringStream ss(fb.data);
  EventHandler h;
  h.strings = &b->strings;
  h.out = &b->events;
  h.stream = &ss;
  h.total_len = len ? len : 1;
  h.opts = &opts;
  rapidjson::Reader reader;
  rapidjson::ParseResult r = reader.Parse<rapidjson::kParseInsituFlag>(ss, h);
  if (!r) {
    if (!h.error.empty()) *err = {path, h.error};
    else if (h.top_not_array) *err = {path, "expected a JSON array of events at top level"};
    else if (h.entry_not_object)
      *err = {path, "event #" + std::to_string(b->events.size()) + " is not a JSON object"};
    else *err = {path, json_error(r.Code(), r.Offset(), len)};
    return false;
  }
  if (opts.progress) opts.progress("events.json", 1.0);
  return true;
}

// Parallel parse of a big events.json: the array is cut in two at an event
// boundary and each half parsed object by object on its own thread. Any
// doubt (a cut that is not a real boundary, any parse error) returns false
// and the caller re-reads the file sequentially, which also produces the
// precise error message.
struct Chunk {
  EventVector* events;
  StringTable* strings;
  size_t end = 0;        // offset where parsing stopped
  bool ok = false;
  bool hit_end = false;  // reached the closing ']'
};

inline bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

void parse_chunk(char* base, size_t start, size_t stop, size_t total, const ReadOptions* opts, Chunk* c) {
  rapidjson::InsituStringStream ss(base + start);
  EventHandler h;
  h.strings = c->strings;
  h.out = c->events;
  h.stream = &ss;
  h.total_len = total ? total : 1;
  h.opts = opts;
  h.depth = 1;  // inside the top-level array
  rapidjson::Reader reader;
  for (;;) {
    if (ss.Peek() != '{') return;
    if (!reader.Parse<rapidjson::kParseInsituFlag | rapidjson::kParseStopWhenDoneFlag>(ss, h)) return;
    while (is_ws(ss.Peek())) ss.Take();
    char ch = ss.Peek();
    if (ch == ']') {
      ss.Take();
      while (is_ws(ss.Peek())) ss.Take();
      c->hit_end = ss.Peek() == '\0';
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

bool read_events_parallel(const std::string& path, const ReadOptions& opts, Bundle* b, ReadError* err,
                          bool* fallback) {
  *fallback = true;
  FileBuffer fb;
  if (!slurp(path, &fb, err)) {
    *fallback = false;
    return false;
  }
  char* d = fb.data;
  size_t len = fb.size;
  size_t i = 0;
  while (i < len && is_ws(d[i])) ++i;
  if (i >= len || d[i] != '[') return false;
  ++i;
  while (i < len && is_ws(d[i])) ++i;
  if (i >= len || d[i] != '{') return false;
  size_t first = i;
  // Cut near the middle: '}' ws* ',' ws* '{'.
  size_t split = 0;
  for (size_t p = len / 2; p + 1 < len && p < len / 2 + (8u << 20); ++p) {
    if (d[p] != '}') continue;
    size_t q = p + 1;
    while (q < len && is_ws(d[q])) ++q;
    if (q >= len || d[q] != ',') continue;
    ++q;
    while (q < len && is_ws(d[q])) ++q;
    if (q < len && d[q] == '{') {
      split = q;
      break;
    }
  }
  if (split == 0) return false;

  b->events.clear();
  b->events.reserve(len / 200 + 16);
  EventVector second;
  second.reserve((len - split) / 200 + 16);
  StringTable second_strings;
  Chunk c1{&b->events, &b->strings};
  Chunk c2{&second, &second_strings};
  std::thread t([&] { parse_chunk(d, split, SIZE_MAX, 0, nullptr, &c2); });
  parse_chunk(d, first, split, split, &opts, &c1);
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
  b->events.insert(b->events.end(), second.begin(), second.end());
  if (opts.progress) opts.progress("events.json", 1.0);
  *fallback = false;
  return true;
}

bool read_events(const std::string& path, const ReadOptions& opts, Bundle* b, ReadError* err) {
  struct stat st;
  if (opts.threads != 1 && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > (16 << 20) &&
      std::thread::hardware_concurrency() > 1) {
    bool fallback = false;
    if (read_events_parallel(path, opts, b, err, &fallback)) return true;
    if (!fallback) return false;
    b->events.clear();
    b->strings = StringTable();
  }
  return read_events_sequential(path, opts, b, err);
}

// allocations.json ------------------------------------------------------------

bool read_allocations(const std::string& path, Bundle* b, ReadError* err) {
  std::vector<char> buf;
  rapidjson::Document d;
  if (!parse_dom(path, &buf, &d, err) || !expect_array(path, d, err)) return false;
  b->allocations.clear();
  b->allocations.reserve(d.Size());
  size_t i = 0;
  for (auto& v : d.GetArray()) {
    if (!v.IsObject()) {
      *err = {path, "allocation #" + std::to_string(i) + " is not a JSON object"};
      return false;
    }
    Fields f{path, "allocation #" + std::to_string(i) + ": ", err};
    Allocation a;
    if (!f.u64(v, "address", &a.address) || !f.u64(v, "size", &a.size) ||
        !f.num(v, "device_id", &a.device_id) || !f.str(v, "api", &a.api) ||
        !f.str(v, "memory_type", &a.memory_type) || !f.dbl(v, "timestamp", &a.timestamp) ||
        !f.num(v, "thread_id", &a.thread_id) || !f.u64(v, "stack_id", &a.stack_id) ||
        !f.u64(v, "seq", &a.seq))
      return false;
    b->allocations.push_back(std::move(a));
    ++i;
  }
  return true;
}

// stacks.json -----------------------------------------------------------------

bool read_stacks(const std::string& path, Bundle* b, ReadError* err) {
  std::vector<char> buf;
  rapidjson::Document d;
  if (!parse_dom(path, &buf, &d, err) || !expect_array(path, d, err)) return false;
  b->stacks.clear();
  b->stacks.reserve(d.Size());
  size_t i = 0;
  for (auto& v : d.GetArray()) {
    if (!v.IsObject()) {
      *err = {path, "stack #" + std::to_string(i) + " is not a JSON object"};
      return false;
    }
    Fields f{path, "stack #" + std::to_string(i) + ": ", err};
    Stack s;
    if (!f.u64(v, "stack_id", &s.stack_id) || !f.str(v, "python", &s.python)) return false;
    auto fr = v.FindMember("frames");
    if (fr != v.MemberEnd() && fr->value.IsArray()) {
      size_t j = 0;
      for (auto& fv : fr->value.GetArray()) {
        if (!fv.IsObject()) {
          *err = {path, "stack #" + std::to_string(i) + " frame #" + std::to_string(j) + " is not a JSON object"};
          return false;
        }
        Fields ff{path, "stack #" + std::to_string(i) + " frame #" + std::to_string(j) + ": ", err};
        Frame fm;
        std::string kind;
        if (!ff.str(fv, "kind", &kind) || !ff.str(fv, "module", &fm.module) ||
            !ff.u64(fv, "offset", &fm.offset) || !ff.str(fv, "function", &fm.function) ||
            !ff.str(fv, "file", &fm.file) || !ff.i64(fv, "line", &fm.line))
          return false;
        fm.kind = kind == "python" ? FrameKind::kPython : kind == "native" ? FrameKind::kNative : FrameKind::kOther;
        s.frames.push_back(std::move(fm));
        ++j;
      }
    } else if (fr != v.MemberEnd() && !fr->value.IsNull()) {
      *err = {path, "stack #" + std::to_string(i) + ": key 'frames' is not an array"};
      return false;
    }
    b->stacks.push_back(std::move(s));
    ++i;
  }
  return true;
}

// environment.json ------------------------------------------------------------

bool read_environment(const std::string& path, Environment* e, ReadError* err) {
  std::vector<char> buf;
  rapidjson::Document d;
  if (!parse_dom(path, &buf, &d, err) || !expect_object(path, d, err)) return false;
  Fields f{path, "", err};
  if (!f.i64(d, "pid", &e->pid) || !f.i64(d, "ppid", &e->ppid) || !f.str(d, "cwd", &e->cwd) ||
      !f.str(d, "hostname", &e->hostname) || !f.i64(d, "driver_version", &e->driver_version) ||
      !f.i64(d, "runtime_version", &e->runtime_version))
    return false;
  auto cl = d.FindMember("cmdline");
  if (cl != d.MemberEnd() && cl->value.IsArray())
    for (auto& v : cl->value.GetArray())
      if (v.IsString()) e->cmdline.emplace_back(v.GetString(), v.GetStringLength());
  auto dv = d.FindMember("devices");
  if (dv != d.MemberEnd() && dv->value.IsArray()) {
    for (auto& v : dv->value.GetArray()) {
      if (!v.IsObject()) continue;
      Fields fd{path, "devices: ", err};
      DeviceInfo di;
      if (!fd.num(v, "device_id", &di.device_id) || !fd.str(v, "name", &di.name) ||
          !fd.u64(v, "total_bytes", &di.total_bytes))
        return false;
      e->devices.push_back(std::move(di));
    }
  }
  auto env = d.FindMember("env");
  if (env != d.MemberEnd() && env->value.IsObject())
    for (auto& kv : env->value.GetObject())
      e->env.emplace_back(std::string(kv.name.GetString(), kv.name.GetStringLength()), value_text(kv.value));
  e->present = true;
  return true;
}

}  // namespace

bool is_bundle_dir(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  return file_exists(join_path(dir, "manifest.json"));
}

bool read_bundle(const std::string& dir, const ReadOptions& opts, Bundle* out, ReadError* err) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    *err = {dir, errno == ENOENT ? "no such file or directory" : std::string(strerror(errno))};
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *err = {dir, "not a bundle: expected a bundle directory, got a file"};
    return false;
  }
  if (!file_exists(join_path(dir, "manifest.json"))) {
    *err = {dir, "not a gpumemrec bundle: manifest.json is missing"};
    return false;
  }
  out->path = dir;
  if (!read_manifest(join_path(dir, "manifest.json"), &out->manifest, err)) return false;
  // Every file the manifest lists must be there.
  for (const auto& name : out->manifest.files) {
    if (name.find('/') != std::string::npos) continue;
    std::string p = join_path(dir, name.c_str());
    if (!file_exists(p)) {
      *err = {p, "missing file (listed in manifest.json)"};
      return false;
    }
  }
  if (!read_metadata(join_path(dir, "metadata.json"), &out->metadata, err)) return false;
  if (opts.environment) {
    std::string p = join_path(dir, "environment.json");
    if (file_exists(p) && !read_environment(p, &out->environment, err)) return false;
  }
  if (opts.stacks) {
    if (!read_stacks(join_path(dir, "stacks.json"), out, err)) return false;
    out->stack_index.clear();
    for (size_t i = 0; i < out->stacks.size(); ++i) out->stack_index[out->stacks[i].stack_id] = i;
  }
  if (opts.allocations && !read_allocations(join_path(dir, "allocations.json"), out, err)) return false;
  if (opts.events && !read_events(join_path(dir, "events.json"), opts, out, err)) return false;
  return true;
}

}  // namespace gpumemrec::model
