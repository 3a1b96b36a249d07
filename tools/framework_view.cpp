#include "tools/framework_view.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "common/bundle_schema.h"
#include "common/format.h"
#include "common/site_rules.h"
#include "tools/pprof_profile.h"

namespace gpumemrec::cli {

namespace {

constexpr size_t kMaxFileBytes = size_t(1) << 30;

bool read_all(const std::string& path, std::string* out) {
  struct stat st {};
  // Only a regular file of at most 1 GiB (a FIFO would block, /dev/zero never end).
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) > kMaxFileBytes) return false;
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  *out = s.str();
  return out->size() <= kMaxFileBytes;
}

void read_digest(const std::string& json, FrameworkView* v) {
  std::string why;
  if (!parse_framework_digest(json.data(), json.size(), &v->d, &why)) {
    v->problem = std::string(file::kFramework) + ": " + why;
    return;
  }
  v->present = true;
  v->x = parse_framework_extras(json.data(), json.size());
}

bool framework_file(const std::string& file) {
  return file.find("/jax/") != std::string::npos || file.find("/jaxlib/") != std::string::npos;
}

// A sample of jaxlib's heap profile is a buffer unless its "kind" label
// says otherwise: compiled programs are samples too, kind "executable" with
// 0 bytes, and one sample stands for every buffer made at one stack (its
// "count" value), as jax.profiler.device_memory_profile() of jaxlib 0.10.2
// gives them (tests/python/run_real_jax.py).
bool is_buffer(const pprof::Sample& s) {
  for (const auto& l : s.labels)
    if (l.first == "kind") return l.second == "buffer";
  return true;
}

// The buffer's creation site: the innermost frame of the program's own
// code, as the recorder names a site (common/site_rules.h: not the
// standard library, nor an installed package such as flax or optax, nor a
// GPUMEMREC_SITE_SKIP pattern); failing that the innermost frame outside
// jax/ and jaxlib/; failing that the innermost.
const pprof::Frame* creation_site(const pprof::Sample& s) {
  const site::Rules& rules = site::rules_from_environment();
  for (const auto& f : s.frames) {
    model::Frame m;
    m.kind = model::FrameKind::kPython;
    m.function = f.function, m.file = f.file, m.line = f.line;
    if (!framework_file(f.file) && rules.classify(m) == site::FrameClass::kUser) return &f;
  }
  for (const auto& f : s.frames)
    if (!framework_file(f.file)) return &f;
  return s.frames.empty() ? nullptr : &s.frames.front();
}

void read_profile(const std::string& gz, FrameworkView* v) {
  pprof::Profile p;
  std::string why;
  if (!pprof::parse_gzip(gz, &p, &why)) {
    v->problem = std::string(file::kFrameworkMemoryProfile) + ": " + why;
    return;
  }
  const size_t bi = p.bytes_index(), ci = p.count_index();
  std::map<std::tuple<std::string, std::string, int64_t>, BufferSite> sites;
  for (const auto& s : p.samples) {
    if (!is_buffer(s)) continue;
    const uint64_t bytes = bi < s.values.size() && s.values[bi] > 0 ? uint64_t(s.values[bi]) : 0;
    const uint64_t count = ci < s.values.size() ? (s.values[ci] > 0 ? uint64_t(s.values[ci]) : 0) : 1;
    static const pprof::Frame none;
    const pprof::Frame* site = creation_site(s);
    if (!site) site = &none;
    BufferSite& b = sites[{site->function, site->file, site->line}];
    b.function = site->function, b.file = site->file, b.line = site->line;
    b.count += count;
    b.bytes += bytes;
    v->buffer_count += count;
    v->buffer_bytes += bytes;
  }
  for (auto& kv : sites) v->buffer_sites.push_back(kv.second);
  std::stable_sort(v->buffer_sites.begin(), v->buffer_sites.end(),
                   [](const BufferSite& a, const BufferSite& b) { return a.bytes > b.bytes; });
}

std::string hex(uint64_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)a);
  return buf;
}

}  // namespace

FrameworkView read_framework_view(const std::string& bundle_dir) {
  FrameworkView v;
  std::string bytes;
  if (!read_all(bundle_dir + "/" + file::kFramework, &bytes)) return v;
  read_digest(bytes, &v);
  if (read_all(bundle_dir + "/" + file::kFrameworkMemoryProfile, &bytes)) read_profile(bytes, &v);
  return v;
}

std::string framework_view_text(const FrameworkView& v, size_t max_rows) {
  if (!v.present) return v.problem.empty() ? "" : "\nFramework: " + v.problem + "\n";
  std::string out;
  if (v.d.framework == "torch" && v.x.at == "exit") {
    out += "\nPyTorch at exit (framework.json) on device " + std::to_string(v.d.device) + "\n";
  } else if (v.d.framework == "torch") {
    out += "\nPyTorch at the out-of-memory (framework.json): asked " + format_bytes(v.d.request_bytes) + " on device " +
           std::to_string(v.d.device) + "\n";
  }
  if (v.d.framework == "torch") {
    out += "  reserved " + format_bytes(v.d.reserved_bytes) + ", allocated " + format_bytes(v.d.allocated_bytes) +
           ", cached free " +
           format_bytes(v.d.reserved_bytes > v.d.allocated_bytes ? v.d.reserved_bytes - v.d.allocated_bytes : 0) +
           "; largest free block " + format_bytes(v.d.largest_free_block) + "\n";
    if (v.d.mostly_free_count)
      out += "  " + std::to_string(v.d.mostly_free_count) + " segment(s) mostly free cache (under half allocated), " +
             format_bytes(v.d.mostly_free_bytes) + " free in them (fragmentation):\n";
    for (size_t i = 0; i < v.d.mostly_free.size() && i < max_rows; ++i) {
      const auto& s = v.d.mostly_free[i];
      out += "    " + hex(s.address) + "  " + format_bytes(s.allocated_size) + " of " + format_bytes(s.total_size) +
             " allocated, largest free block " + format_bytes(s.largest_free_block) + "\n";
    }
  } else {
    out += "\n" + v.d.framework + " at the out-of-memory";
    if (v.d.request_bytes) out += ": asked about " + format_bytes(v.d.request_bytes);
    if (v.d.device >= 0) out += (v.d.request_bytes ? " on device " : ": device ") + std::to_string(v.d.device);
    out += "\n  " + v.d.error + "\n";
  }
  if (v.buffer_count) {
    out += "JAX live buffers (framework_memory_profile.pb.gz): " + std::to_string(v.buffer_count) + ", " +
           format_bytes(v.buffer_bytes) + "\n";
    for (size_t i = 0; i < v.buffer_sites.size() && i < max_rows; ++i) {
      const auto& s = v.buffer_sites[i];
      out += "  " + format_bytes(s.bytes) + " in " + std::to_string(s.count) + "  " + s.function + " (" + s.file +
             ":" + std::to_string(s.line) + ")\n";
    }
  }
  if (!v.problem.empty()) out += "  (" + v.problem + ")\n";
  return out;
}

void json_framework_view(JsonWriter& w, const FrameworkView& v, size_t max_rows) {
  w.Key("framework");
  if (!v.present) {
    w.Null();
    return;
  }
  w.StartObject();
  json_kv(w, "name", v.d.framework);
  json_kv(w, "device", v.d.device);
  json_kv(w, "request_bytes", v.d.request_bytes);
  json_kv(w, "reserved_bytes", v.d.reserved_bytes);
  json_kv(w, "allocated_bytes", v.d.allocated_bytes);
  json_kv(w, "largest_free_block", v.d.largest_free_block);
  json_kv(w, "mostly_free_segment_count", v.d.mostly_free_count);
  json_kv(w, "mostly_free_bytes", v.d.mostly_free_bytes);
  json_kv(w, "error", v.d.error);
  json_kv(w, "live_buffer_count", v.buffer_count);
  json_kv(w, "live_buffer_bytes", v.buffer_bytes);
  w.Key("live_buffer_sites");
  w.StartArray();
  for (size_t i = 0; i < v.buffer_sites.size() && i < max_rows; ++i) {
    const auto& s = v.buffer_sites[i];
    w.StartObject();
    json_kv(w, "function", s.function);
    json_kv(w, "file", s.file);
    json_kv(w, "line", s.line);
    json_kv(w, "count", s.count);
    json_kv(w, "bytes", s.bytes);
    w.EndObject();
  }
  w.EndArray();
  json_kv_or_null(w, "problem", v.problem);
  w.EndObject();
}

}  // namespace gpumemrec::cli
