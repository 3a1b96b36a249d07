#include "tools/pprof_profile.h"

#include <zlib.h>

#include <map>

namespace gpumemrec {
namespace pprof {

namespace {

// One protobuf message's fields, read in order.
class Reader {
 public:
  Reader(const char* p, size_t n) : p_(reinterpret_cast<const uint8_t*>(p)), end_(p_ + n) {}
  bool done() const { return p_ >= end_ || bad_; }
  bool bad() const { return bad_; }
  // The next field: its number and wire type; a varint's value or a
  // length-delimited payload. Other wire types are skipped.
  bool next(uint32_t* field, uint32_t* wire, uint64_t* value, const char** data, size_t* len) {
    uint64_t key;
    if (!varint(&key)) return false;
    *field = uint32_t(key >> 3);
    *wire = uint32_t(key & 7);
    switch (*wire) {
      case 0: return varint(value);
      case 1: return skip(8);
      case 5: return skip(4);
      case 2: {
        uint64_t n;
        if (!varint(&n) || n > uint64_t(end_ - p_)) return fail();
        *data = reinterpret_cast<const char*>(p_);
        *len = size_t(n);
        p_ += n;
        return true;
      }
      default: return fail();
    }
  }
  bool varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return fail();
      const uint8_t b = *p_++;
      *v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return true;
    }
    return fail();
  }

 private:
  bool skip(size_t n) {
    if (size_t(end_ - p_) < n) return fail();
    p_ += n;
    return true;
  }
  bool fail() {
    bad_ = true;
    return false;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool bad_ = false;
};

// A repeated integer field: packed (wire 2) or one value (wire 0).
void add_ints(uint32_t wire, uint64_t value, const char* data, size_t len, std::vector<uint64_t>* out, bool* bad) {
  if (wire == 0) {
    out->push_back(value);
    return;
  }
  Reader r(data, len);
  uint64_t v;
  while (!r.done())
    if (r.varint(&v)) out->push_back(v);
  *bad = *bad || r.bad();
}

struct RawSample {
  std::vector<uint64_t> locations, values;
  std::vector<std::pair<uint64_t, uint64_t>> labels;  // (key, str) string indices
};
struct RawFunction {
  uint64_t name = 0, file = 0;
};
struct RawLine {
  uint64_t function = 0;
  int64_t line = 0;
};

struct Raw {
  std::vector<std::pair<uint64_t, uint64_t>> types;
  std::vector<RawSample> samples;
  std::map<uint64_t, std::vector<RawLine>> locations;  // id -> lines (inlined first)
  std::map<uint64_t, RawFunction> functions;
  std::vector<std::string> strings;
  bool bad = false;
};

using Visit = void (*)(Raw&, uint32_t field, uint32_t wire, uint64_t value, const char* data, size_t len, void* obj);

// Reads one message, calling `visit` per field; false when malformed.
bool read_message(Raw& raw, const char* data, size_t len, Visit visit, void* obj) {
  Reader r(data, len);
  uint32_t field, wire;
  uint64_t value = 0;
  const char* d = nullptr;
  size_t n = 0;
  while (!r.done())
    if (r.next(&field, &wire, &value, &d, &n)) visit(raw, field, wire, value, d, n, obj);
  return !r.bad() && !raw.bad;
}

void visit_pair(Raw&, uint32_t field, uint32_t wire, uint64_t v, const char*, size_t, void* obj) {
  auto* p = static_cast<std::pair<uint64_t, uint64_t>*>(obj);
  if (wire != 0) return;
  if (field == 1) p->first = v;
  if (field == 2) p->second = v;
}

void visit_sample(Raw& raw, uint32_t field, uint32_t wire, uint64_t v, const char* d, size_t n, void* obj) {
  auto* s = static_cast<RawSample*>(obj);
  if (field == 1) add_ints(wire, v, d, n, &s->locations, &raw.bad);
  else if (field == 2) add_ints(wire, v, d, n, &s->values, &raw.bad);
  else if (field == 3 && wire == 2) {
    std::pair<uint64_t, uint64_t> label{0, 0};
    raw.bad = raw.bad || !read_message(raw, d, n, visit_pair, &label);
    s->labels.push_back(label);
  }
}

void visit_line(Raw&, uint32_t field, uint32_t wire, uint64_t v, const char*, size_t, void* obj) {
  auto* l = static_cast<RawLine*>(obj);
  if (wire != 0) return;
  if (field == 1) l->function = v;
  if (field == 2) l->line = int64_t(v);
}

struct LocationBuild {
  uint64_t id = 0;
  std::vector<RawLine> lines;
};

void visit_location(Raw& raw, uint32_t field, uint32_t wire, uint64_t v, const char* d, size_t n, void* obj) {
  auto* loc = static_cast<LocationBuild*>(obj);
  if (field == 1 && wire == 0) loc->id = v;
  if (field == 4 && wire == 2) {
    RawLine line;
    raw.bad = raw.bad || !read_message(raw, d, n, visit_line, &line);
    loc->lines.push_back(line);
  }
}

struct FunctionBuild {
  uint64_t id = 0;
  RawFunction f;
};

void visit_function(Raw&, uint32_t field, uint32_t wire, uint64_t v, const char*, size_t, void* obj) {
  auto* fn = static_cast<FunctionBuild*>(obj);
  if (wire != 0) return;
  if (field == 1) fn->id = v;
  if (field == 2) fn->f.name = v;
  if (field == 4) fn->f.file = v;
}

void visit_profile(Raw& raw, uint32_t field, uint32_t wire, uint64_t, const char* d, size_t n, void*) {
  if (wire != 2) return;
  if (field == 1) {
    std::pair<uint64_t, uint64_t> t{0, 0};
    raw.bad = raw.bad || !read_message(raw, d, n, visit_pair, &t);
    raw.types.push_back(t);
  } else if (field == 2) {
    RawSample s;
    raw.bad = raw.bad || !read_message(raw, d, n, visit_sample, &s);
    raw.samples.push_back(std::move(s));
  } else if (field == 4) {
    LocationBuild loc;
    raw.bad = raw.bad || !read_message(raw, d, n, visit_location, &loc);
    raw.locations[loc.id] = std::move(loc.lines);
  } else if (field == 5) {
    FunctionBuild fn;
    raw.bad = raw.bad || !read_message(raw, d, n, visit_function, &fn);
    raw.functions[fn.id] = fn.f;
  } else if (field == 6) {
    raw.strings.emplace_back(d, n);
  }
}

std::string str(const Raw& raw, uint64_t i) { return i < raw.strings.size() ? raw.strings[i] : std::string(); }

Sample resolve(const Raw& raw, const RawSample& rs) {
  Sample s;
  for (uint64_t v : rs.values) s.values.push_back(int64_t(v));
  for (uint64_t id : rs.locations) {
    auto loc = raw.locations.find(id);
    if (loc == raw.locations.end()) continue;
    for (const RawLine& l : loc->second) {
      auto fn = raw.functions.find(l.function);
      Frame f;
      if (fn != raw.functions.end()) f.function = str(raw, fn->second.name), f.file = str(raw, fn->second.file);
      f.line = l.line;
      s.frames.push_back(std::move(f));
    }
  }
  for (const auto& l : rs.labels) s.labels.emplace_back(str(raw, l.first), str(raw, l.second));
  return s;
}

}  // namespace

size_t Profile::bytes_index() const {
  for (size_t i = 0; i < sample_types.size(); ++i)
    if (sample_types[i].second == "bytes") return i;
  return sample_types.empty() ? 0 : sample_types.size() - 1;
}

size_t Profile::count_index() const {
  for (size_t i = 0; i < sample_types.size(); ++i)
    if (sample_types[i].second == "count") return i;
  return std::string::npos;
}

bool parse(const std::string& bytes, Profile* out, std::string* why) {
  Raw raw;
  if (!read_message(raw, bytes.data(), bytes.size(), visit_profile, nullptr)) {
    *why = "not a pprof profile (malformed protocol buffer)";
    return false;
  }
  for (const auto& t : raw.types) out->sample_types.emplace_back(str(raw, t.first), str(raw, t.second));
  for (const RawSample& rs : raw.samples) out->samples.push_back(resolve(raw, rs));
  return true;
}

bool parse_gzip(const std::string& gz, Profile* out, std::string* why, size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
    *why = "zlib could not start";
    return false;
  }
  std::string plain;
  char buf[65536];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = uInt(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    plain.append(buf, sizeof buf - z.avail_out);
    if (plain.size() > max_bytes) rc = Z_MEM_ERROR;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    *why = "not a complete gzip stream";
    return false;
  }
  return parse(plain, out, why);
}

}  // namespace pprof
}  // namespace gpumemrec
