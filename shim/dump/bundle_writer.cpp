#include "shim/dump/bundle_writer.h"

#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <ctime>
#include <map>
#include <unordered_map>

#include "shim/base/clock.h"
#include "shim/dump/event_json.h"
#include "shim/dump/json_out.h"
#include "shim/record/python_stack.h"
#include "shim/record/recorder.h"
#include "shim/dump/symbolizer.h"

extern char** environ;

namespace gpumemrec {

namespace {

const char* const kGenerator = "gpumemrec 0.1.0";

double seconds(uint64_t ns) { return double(ns) / 1e9; }

std::string iso_utc(uint64_t ns) {
  time_t t = time_t(ns / 1000000000ull);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// One output file: created exclusively (never through a planted symlink),
// owner-only, streamed through the shared buffer.
class OutFile {
 public:
  OutFile(int dirfd, const char* name, WriteBuffer buf, std::vector<std::string>* files)
      : fd_(openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)),
        out_(fd_, buf.data, buf.size) {
    if (fd_ >= 0) files->push_back(name);
    else open_errno_ = errno;
  }
  ~OutFile() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  FdOut& out() { return out_; }
  bool finish(const char* name, std::string* error) {
    if (fd_ < 0) {
      *error = std::string("cannot create ") + name + ": " + std::strerror(open_errno_);
      return false;
    }
    bool good = out_.finish();
    int err = out_.error();
    if (good && fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
      good = false;
      err = errno;
    }
    if (!good) *error = std::string("cannot write ") + name + ": " + std::strerror(err);
    return good;
  }

 private:
  int fd_;
  int open_errno_ = 0;
  FdOut out_;
};

void write_live(JsonWriter& w, const LiveEntry& a) {
  w.StartObject();
  w.Key("address"); w.Uint64(a.key);
  w.Key("size"); w.Uint64(a.size);
  w.Key("device_id"); w.Int(a.device);
  w.Key("api"); w.String(hook_name(a.api));
  w.Key("memory_type"); w.String(memory_type_name(MemoryType(a.memory_type)));
  w.Key("timestamp"); w.Double(seconds(a.time_ns));
  w.Key("thread_id"); w.Uint(a.tid);
  w.Key("stack_id"); w.Uint(a.stack_id);
  w.Key("seq"); w.Uint64(a.seq);
  w.EndObject();
}

struct FrameText {
  bool python;
  std::string function, file, module;
  uint64_t offset;
  int line;
};

// Frames of a stack as written: Python frames first (the program's own
// view), then native frames; both innermost first.
std::vector<FrameText> stack_frames(Recorder* r, Symbolizer& sym, uint32_t id, const char** status) {
  std::vector<FrameText> out;
  const uint64_t* words = nullptr;
  uint32_t n = 0;
  *status = "disabled";
  if (!r->stacks.get(id, &words, &n)) return out;
  *status = python_status(words, n);
  for (uint32_t i = 0; i < n; ++i) {
    if (!is_python_word(words[i])) continue;
    if (is_python_marker(words[i])) continue;  // no_gil, native_thread
    PythonFrameInfo pi;
    FrameText f{true, "", "", "", 0, 0};
    if (describe_python_frame(words[i], &pi)) {
      f.function = pi.function;
      f.file = pi.file;
      f.line = pi.line;
    }
    out.push_back(f);
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (is_python_word(words[i])) continue;
    const NativeFrameInfo& ni = sym.describe(words[i]);
    out.push_back(FrameText{false, ni.function, ni.file, ni.module, ni.offset, ni.line});
  }
  return out;
}

std::string frame_line(const FrameText& f) {
  std::string s;
  if (f.python) {
    s = (f.function.empty() ? "?" : f.function) + " (" + (f.file.empty() ? "?" : f.file) + ":" +
        std::to_string(f.line) + ") [python]";
    return s;
  }
  char off[32];
  std::snprintf(off, sizeof off, "+0x%llx", (unsigned long long)f.offset);
  const char* base = std::strrchr(f.module.c_str(), '/');
  std::string mod = base ? base + 1 : f.module;
  s = f.function.empty() ? mod + off : f.function;
  if (!f.file.empty()) s += " (" + f.file + ":" + std::to_string(f.line) + ")";
  else if (!f.function.empty()) s += " (" + mod + off + ")";
  return s;
}

bool is_secret_name(const std::string& name) {
  static const char* kWords[] = {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"};
  std::string up = name;
  for (auto& c : up) c = char(std::toupper((unsigned char)c));
  for (auto* w : kWords)
    if (up.find(w) != std::string::npos) return true;
  return false;
}

bool is_interesting_env(const std::string& name) {
  static const char* kPrefixes[] = {"CUDA_", "HIP_", "ROCR_", "HSA_", "PYTORCH_", "XLA_", "JAX_", "NCCL_",
                                    "GPUMEMREC_", "TF_", "CUPY_"};
  static const char* kNames[] = {"LD_PRELOAD", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                 "MASTER_ADDR", "MASTER_PORT", "SLURM_JOB_ID", "SLURM_PROCID", "SLURM_LOCALID",
                                 "SLURM_NTASKS", "SLURM_NODEID", "OMPI_COMM_WORLD_RANK",
                                 "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                                 "PBS_JOBID", "LSB_JOBID", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"};
  for (auto* p : kPrefixes)
    if (name.rfind(p, 0) == 0) return true;
  for (auto* n : kNames)
    if (name == n) return true;
  return false;
}

const char* first_env(std::initializer_list<const char*> names) {
  for (auto* n : names)
    if (const char* v = std::getenv(n)) return v;
  return nullptr;
}

void write_custom_metadata(JsonWriter& w) {
  w.Key("custom_metadata");
  w.StartObject();
  auto int_or_string = [&](const char* key, const char* v) {
    if (!v) return;
    w.Key(key);
    char* end = nullptr;
    long long n = std::strtoll(v, &end, 10);
    if (*v && end && *end == '\0') w.Int64(n);
    else w.String(v);
  };
  int_or_string("rank", first_env({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}));
  int_or_string("local_rank", first_env({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}));
  int_or_string("world_size", first_env({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}));
  if (const char* v = first_env({"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID"})) {
    w.Key("job_id");
    w.String(v);
  }
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) {
    w.Key("hostname");
    w.String(host);
  }
  w.EndObject();
}

int collect_modules(struct dl_phdr_info* info, size_t, void* data) {
  auto* v = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name && info->dlpi_name[0]) v->push_back(info->dlpi_name);
  return 0;
}

std::string read_file_text(const char* path, size_t max) {
  std::string s;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t n;
  while (s.size() < max && (n = read(fd, buf, sizeof buf)) > 0) s.append(buf, size_t(n));
  close(fd);
  return s;
}

struct Site {
  uint32_t stack_id;
  uint64_t bytes = 0;
  uint64_t count = 0;
};

}  // namespace

bool write_bundle_files(int dirfd, const BundleInput& in, Symbolizer& sym, WriteBuffer buf,
                        std::vector<std::string>* files, std::string* error) {
  Recorder* r = in.recorder;
  const FailureInfo* f = in.failure;

  // --- Snapshot: the live tables first, then the ring up to this point.
  //
  // Consistency (docs/reliability.md): the cut is ring.end() read after the
  // live tables; events.json holds the events before the cut, and
  // allocations.json is reconciled with them, so that replaying
  // events.json never contradicts allocations.json: an allocation whose free
  // event is in events.json is not listed, and an allocation whose event is
  // in events.json (and not freed there) is listed even if the live-table
  // snapshot missed it (it was inserted, or its free begun, while the shards
  // were copied). The vector is reserved up front: one allocation, not a
  // doubling series (the dump may run with the host short of memory).
  std::vector<LiveEntry> live;
  live.reserve(size_t(r->live.count() + r->handles.count()) + 256);
  r->live.snapshot(&live);
  r->handles.snapshot(&live);
  const uint64_t end_seq = r->ring.end();
  const uint64_t cap = r->ring.capacity();
  const uint64_t first_seq = end_seq > cap + 1 ? end_seq - cap : 1;
  auto is_phys = [](uint8_t t) { return MemoryType(t) == MemoryType::kPhysical; };
  auto by_key = [&](const LiveEntry& a, const LiveEntry& b) {
    const bool pa = is_phys(a.memory_type), pb = is_phys(b.memory_type);
    return pa != pb ? pa < pb : a.key < b.key;
  };
  std::sort(live.begin(), live.end(), by_key);
  constexpr int16_t kDead = INT16_MIN;
  auto find_live = [&](uint64_t key, bool phys) -> LiveEntry* {
    LiveEntry probe;
    probe.key = key;
    probe.memory_type = uint8_t(phys ? MemoryType::kPhysical : MemoryType::kDevice);
    auto it = std::lower_bound(live.begin(), live.end(), probe, by_key);
    if (it == live.end() || it->key != key || is_phys(it->memory_type) != phys) return nullptr;
    return &*it;
  };
  std::vector<LiveEntry> added;
  auto reconcile = [&](const Event& e) {
    const EventKind k = event_kind(e);
    const MemoryType t = event_memory_type(e);
    if (t == MemoryType::kMapping || e.address == 0) return;
    const bool phys = t == MemoryType::kPhysical;
    if (k == EventKind::kAlloc) {
      LiveEntry* le = find_live(e.address, phys);
      if (le && le->device != kDead) {
        if (le->seq >= e.seq) return;  // listed (or re-allocated later)
        le->device = kDead;            // an older entry at this address: superseded
      }
      LiveEntry a;
      a.key = e.address;
      a.size = e.size;
      a.time_ns = e.time_ns;
      a.seq = e.seq;
      a.stack_id = e.stack_id;
      a.tid = e.tid;
      a.device = int16_t(event_device(e));
      a.api = e.api;
      a.memory_type = uint8_t(t);
      added.push_back(a);
    } else if (k == EventKind::kFree) {
      LiveEntry* le = find_live(e.address, phys);
      if (le && le->device != kDead && le->seq < e.seq) le->device = kDead;
      for (size_t i = 0; i < added.size();) {
        if (added[i].key == e.address && is_phys(added[i].memory_type) == phys && added[i].seq < e.seq) {
          added[i] = added.back();
          added.pop_back();
        } else {
          ++i;
        }
      }
    }
  };
  std::vector<uint32_t> stack_ids;
  uint64_t captured = 0;

  // --- events.json
  {
    OutFile file(dirfd, "events.json", buf, files);
    if (file.ok()) {
      FdOut& out = file.out();
      out.write("[");
      Event e;
      // A slot claimed before the cut but still being filled is waited for,
      // briefly (20 ms per dump in all); after that it is a hole.
      uint64_t wait_deadline = 0;
      for (uint64_t s = first_seq; s < end_seq; ++s) {
        bool got = r->ring.read(s, &e);
        while (!got) {
          const uint64_t now = monotonic_ns();
          if (wait_deadline == 0) wait_deadline = now + 20000000ull;
          if (now >= wait_deadline) break;
          sched_yield();
          got = r->ring.read(s, &e);
        }
        if (!got) continue;
        write_event_json(out, e, captured == 0);
        reconcile(e);
        if (e.stack_id) stack_ids.push_back(e.stack_id);
        ++captured;
      }
      out.write("]");
    }
    if (!file.finish("events.json", error)) return false;
  }

  // Apply the reconciliation, then order largest first.
  live.erase(std::remove_if(live.begin(), live.end(), [&](const LiveEntry& a) { return a.device == kDead; }),
             live.end());
  live.insert(live.end(), added.begin(), added.end());
  std::sort(live.begin(), live.end(), [](const LiveEntry& a, const LiveEntry& b) {
    return a.size != b.size ? a.size > b.size : a.seq < b.seq;
  });
  std::map<int, uint64_t> live_by_device;
  uint64_t live_bytes = 0, live_count = 0;
  for (const auto& a : live) {
    if (MemoryType(a.memory_type) == MemoryType::kMapping) continue;
    live_by_device[a.device] += a.size;
    live_bytes += a.size;
    ++live_count;
    if (a.stack_id) stack_ids.push_back(a.stack_id);
  }

  // --- allocations.json
  {
    OutFile file(dirfd, "allocations.json", buf, files);
    if (file.ok()) {
      JsonWriter w(file.out());
      w.StartArray();
      for (const auto& a : live) write_live(w, a);
      w.EndArray();
    }
    if (!file.finish("allocations.json", error)) return false;
  }

  // --- stacks.json
  if (f && f->stack_id) stack_ids.push_back(f->stack_id);
  std::sort(stack_ids.begin(), stack_ids.end());
  stack_ids.erase(std::unique(stack_ids.begin(), stack_ids.end()), stack_ids.end());
  std::unordered_map<uint32_t, std::vector<FrameText>> frames_by_id;
  sym.begin();
  {
    OutFile file(dirfd, "stacks.json", buf, files);
    if (file.ok()) {
      JsonWriter w(file.out());
      w.StartArray();
      for (uint32_t id : stack_ids) {
        if (id == StackTable::kFull) continue;
        const char* status = "disabled";
        auto frames = stack_frames(r, sym, id, &status);
        w.StartObject();
        w.Key("stack_id"); w.Uint(id);
        w.Key("python"); w.String(status);
        w.Key("frames");
        w.StartArray();
        for (const auto& fr : frames) {
          w.StartObject();
          w.Key("kind"); w.String(fr.python ? "python" : "native");
          w.Key("module"); w.String(fr.module);
          w.Key("offset"); w.Uint64(fr.offset);
          w.Key("function"); w.String(fr.function);
          w.Key("file"); w.String(fr.file);
          w.Key("line"); w.Int(fr.line);
          w.EndObject();
        }
        w.EndArray();
        w.EndObject();
        frames_by_id.emplace(id, std::move(frames));
      }
      w.EndArray();
    }
    if (!file.finish("stacks.json", error)) {
      sym.end();
      return false;
    }
  }
  sym.end();

  const bool runtime_api = f && hook_info(f->api).library != Library::CUDA;
  const char* err_name = f ? error_name(in.backend, runtime_api, f->result) : "";

  // --- metadata.json
  {
    OutFile file(dirfd, "metadata.json", buf, files);
    if (file.ok()) {
      JsonWriter w(file.out());
      w.StartObject();
      w.Key("reason"); w.String(dump_reason_name(in.reason));
      w.Key("api"); f ? w.String(hook_name(f->api)) : w.Null();
      w.Key("error_code"); f ? w.Int(f->result) : w.Null();
      w.Key("error_name"); f ? w.String(err_name) : w.Null();
      w.Key("requested_bytes"); f ? w.Uint64(f->size) : w.Null();
      w.Key("device_id"); f ? w.Int(f->device) : w.Null();
      w.Key("device_free_bytes"); in.devices.has_mem_info ? w.Uint64(in.devices.free_bytes) : w.Null();
      w.Key("device_total_bytes"); in.devices.has_mem_info ? w.Uint64(in.devices.total_bytes) : w.Null();
      w.Key("live_bytes"); w.Uint64(live_bytes);
      w.Key("live_allocations"); w.Uint64(live_count);
      w.Key("live_bytes_by_device");
      w.StartObject();
      for (auto& kv : live_by_device) {
        w.Key(std::to_string(kv.first).c_str());
        w.Uint64(kv.second);
      }
      w.EndObject();
      w.Key("thread_id"); f ? w.Uint(f->tid) : w.Uint(current_tid());
      w.Key("stack_id"); f ? w.Uint(f->stack_id) : w.Uint(0);
      std::string ctx;
      if (f) {
        ctx = std::string(hook_name(f->api)) + "(" + std::to_string(f->size) + ") on device " +
              std::to_string(f->device) + " returned " + err_name;
        if (in.reason == DumpReason::kLimit) ctx += " (refused by GPUMEMREC_LIMIT)";
        if (in.reason == DumpReason::kFailAfter) ctx += " (injected by GPUMEMREC_FAIL_AFTER)";
      } else {
        ctx = std::string("dump on ") + dump_reason_name(in.reason);
      }
      w.Key("context"); w.String(ctx);
      w.Key("backend"); w.String(backend_name(in.backend));
      w.Key("captured_event_count"); w.Uint64(captured);
      w.Key("total_event_count"); w.Uint64(end_seq - 1);
      w.Key("timestamp"); w.Double(seconds(f ? f->time_ns : in.created_ns));
      w.Key("gpu_processes");
      if (in.gpu_processes.available) {
        w.StartArray();
        for (const auto& p : in.gpu_processes.processes) {
          w.StartObject();
          w.Key("pid"); w.Uint(p.pid);
          w.Key("name"); w.String(p.name);
          w.Key("used_bytes"); p.has_used ? w.Uint64(p.used_bytes) : w.Null();
          w.Key("this_process"); w.Bool(p.is_self);
          w.EndObject();
        }
        w.EndArray();
      } else {
        w.Null();
      }
      w.Key("gpu_processes_note"); w.String(in.gpu_processes.available ? "from NVML" : in.gpu_processes.error);
      write_custom_metadata(w);
      w.EndObject();
    }
    if (!file.finish("metadata.json", error)) return false;
  }

  // --- environment.json
  {
    OutFile file(dirfd, "environment.json", buf, files);
    if (file.ok()) {
      JsonWriter w(file.out());
      w.StartObject();
      w.Key("pid"); w.Int(getpid());
      w.Key("ppid"); w.Int(getppid());
      char cwd[PATH_MAX] = {};
      w.Key("cwd"); w.String(getcwd(cwd, sizeof cwd) ? cwd : "");
      w.Key("cmdline");
      w.StartArray();
      std::string cmd = read_file_text("/proc/self/cmdline", 1 << 16);
      for (size_t p = 0; p < cmd.size();) {
        size_t z = cmd.find('\0', p);
        if (z == std::string::npos) z = cmd.size();
        w.String(cmd.data() + p, rapidjson::SizeType(z - p));
        p = z + 1;
      }
      w.EndArray();
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      w.Key("hostname"); w.String(host);
      w.Key("uid"); w.Uint(getuid());
      w.Key("driver_version"); in.devices.driver_version ? w.Int(in.devices.driver_version) : w.Null();
      w.Key("runtime_version"); in.devices.runtime_version ? w.Int(in.devices.runtime_version) : w.Null();
      w.Key("devices");
      w.StartArray();
      for (const auto& d : in.devices.devices) {
        w.StartObject();
        w.Key("device_id"); w.Int(d.device_id);
        w.Key("name"); w.String(d.name);
        w.Key("total_bytes"); w.Uint64(d.total_bytes);
        w.EndObject();
      }
      w.EndArray();
      std::vector<std::string> modules;
      dl_iterate_phdr(collect_modules, &modules);
      w.Key("modules");
      w.StartArray();
      for (auto& m : modules) w.String(m);
      w.EndArray();
      w.Key("env");
      w.StartObject();
      std::vector<std::pair<std::string, std::string>> env;
      for (char** e = environ; e && *e; ++e) {
        const char* eq = std::strchr(*e, '=');
        if (!eq) continue;
        std::string name(*e, size_t(eq - *e));
        if (!is_interesting_env(name)) continue;
        env.emplace_back(name, is_secret_name(name) ? "<redacted>" : std::string(eq + 1));
      }
      std::sort(env.begin(), env.end());
      for (auto& kv : env) {
        w.Key(kv.first.c_str());
        w.String(kv.second);
      }
      w.EndObject();
      const Config& c = r->cfg;
      w.Key("config");
      w.StartObject();
      w.Key("dir"); w.String(c.dir);
      w.Key("ring_events"); w.Uint64(c.ring_events);
      w.Key("stack_depth"); w.Int(c.stack_depth);
      w.Key("episode_ms"); w.Uint64(c.episode_ms);
      w.Key("max_dumps"); w.Uint64(c.max_dumps);
      w.Key("max_total_mb"); w.Uint64(c.max_total_mb);
      w.Key("python_stacks"); w.Bool(c.python_stacks);
      w.Key("symbolizer"); w.String(sym.backend());
      w.EndObject();
      w.EndObject();
    }
    if (!file.finish("environment.json", error)) return false;
  }

  // --- summary.txt
  {
    OutFile file(dirfd, "summary.txt", buf, files);
    if (file.ok()) {
      FdOut& o = file.out();
      char line[1024];
      o.write("gpumemrec dump ");
      o.write(in.bundle_name.c_str());
      o.write("\n\n");
      if (f) {
        std::snprintf(line, sizeof line, "What failed:  %s(%llu bytes = %s) on device %d -> %s (%d)%s\n",
                      hook_name(f->api), (unsigned long long)f->size, format_bytes(f->size).c_str(), f->device,
                      err_name, f->result,
                      in.reason == DumpReason::kLimit      ? " [refused by GPUMEMREC_LIMIT]"
                      : in.reason == DumpReason::kFailAfter ? " [injected by GPUMEMREC_FAIL_AFTER]"
                                                            : "");
        o.write(line);
      } else {
        std::snprintf(line, sizeof line, "Reason:       %s\n", dump_reason_name(in.reason));
        o.write(line);
      }
      if (in.devices.has_mem_info) {
        std::snprintf(line, sizeof line, "Device:       %s free of %s total (asked of the driver at dump time)\n",
                      format_bytes(in.devices.free_bytes).c_str(), format_bytes(in.devices.total_bytes).c_str());
      } else {
        std::snprintf(line, sizeof line, "Device:       free/total unknown (the driver did not answer)\n");
      }
      o.write(line);
      std::snprintf(line, sizeof line, "This process: %s live in %llu allocations", format_bytes(live_bytes).c_str(),
                    (unsigned long long)live_count);
      o.write(line);
      if (live_by_device.size() > 1) {
        o.write(" (");
        bool first = true;
        for (auto& kv : live_by_device) {
          std::snprintf(line, sizeof line, "%sdevice %d: %s", first ? "" : ", ", kv.first,
                        format_bytes(kv.second).c_str());
          o.write(line);
          first = false;
        }
        o.write(")");
      }
      o.write("\n");
      std::snprintf(line, sizeof line, "Events:       %llu in this bundle, %llu recorded since start\n",
                    (unsigned long long)captured, (unsigned long long)(end_seq - 1));
      o.write(line);
      if (in.gpu_processes.available) {
        o.write("On the GPU:   ");
        o.write(describe_gpu_processes(in.gpu_processes).c_str());
        o.write("\n");
      }
      if (f && f->stack_id) {
        o.write("\nFailing call stack:\n");
        auto it = frames_by_id.find(f->stack_id);
        if (it != frames_by_id.end()) {
          int k = 0;
          for (const auto& fr : it->second) {
            if (k++ >= 24) break;
            o.write("    ");
            o.write(frame_line(fr).c_str());
            o.write("\n");
          }
        }
      }
      // Top allocation sites by live bytes.
      std::unordered_map<uint32_t, Site> sites;
      for (const auto& a : live) {
        if (MemoryType(a.memory_type) == MemoryType::kMapping) continue;
        Site& s = sites[a.stack_id];
        s.stack_id = a.stack_id;
        s.bytes += a.size;
        s.count += 1;
      }
      std::vector<Site> top;
      for (auto& kv : sites) top.push_back(kv.second);
      std::sort(top.begin(), top.end(), [](const Site& a, const Site& b) { return a.bytes > b.bytes; });
      o.write("\nTop allocation sites by live bytes:\n");
      if (top.empty()) o.write("    (nothing live)\n");
      for (size_t i = 0; i < top.size() && i < 10; ++i) {
        std::snprintf(line, sizeof line, "\n#%zu  %s in %llu allocation%s (%.1f%% of live)\n", i + 1,
                      format_bytes(top[i].bytes).c_str(), (unsigned long long)top[i].count,
                      top[i].count == 1 ? "" : "s", live_bytes ? 100.0 * double(top[i].bytes) / double(live_bytes) : 0);
        o.write(line);
        auto it = frames_by_id.find(top[i].stack_id);
        if (it == frames_by_id.end() || it->second.empty()) {
          o.write("    (no stack recorded)\n");
          continue;
        }
        int k = 0;
        for (const auto& fr : it->second) {
          if (k++ >= 12) {
            o.write("    ...\n");
            break;
          }
          o.write("    ");
          o.write(frame_line(fr).c_str());
          o.write("\n");
        }
      }
      o.write("\nFiles: events.json (recent events), allocations.json (live), stacks.json, metadata.json,\n"
              "environment.json. `gpumemrec report <bundle>` gives the full view.\n");
    }
    if (!file.finish("summary.txt", error)) return false;
  }

  // --- manifest.json, last.
  {
    std::vector<std::string> listed = *files;
    listed.push_back("manifest.json");
    OutFile file(dirfd, "manifest.json", buf, files);
    if (file.ok()) {
      JsonWriter w(file.out());
      w.StartObject();
      w.Key("schema_version"); w.Int(1);
      w.Key("bundle_name"); w.String(in.bundle_name);
      w.Key("created_at_utc"); w.String(iso_utc(in.created_ns));
      w.Key("reason"); w.String(dump_reason_name(in.reason));
      w.Key("backend"); w.String(backend_name(in.backend));
      w.Key("event_count"); w.Uint64(captured);
      w.Key("files");
      w.StartArray();
      for (auto& name : listed) w.String(name);
      w.EndArray();
      w.Key("generator"); w.String(kGenerator);
      w.Key("pid"); w.Int(getpid());
      w.EndObject();
    }
    if (!file.finish("manifest.json", error)) return false;
  }
  return true;
}

}  // namespace gpumemrec
