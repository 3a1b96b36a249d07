// environment.json: the process, the host, the devices, the loaded modules,
// the GPU-related environment and our configuration. Secrets are redacted
// (common/redact.h) in the environment and in the command line.
#include <limits.h>
#include <link.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/redact.h"
#include "shim/base/fd_io.h"
#include "shim/dump/write/bundle_files.h"
#include "shim/record/recorder.h"
#include "shim/record/stack_capture.h"

extern char** environ;

namespace gpumemrec {

namespace {

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

std::vector<std::string> read_cmdline() {
  std::vector<std::string> argv;
  const std::string cmd = read_file_at(AT_FDCWD, "/proc/self/cmdline", 1 << 16);
  for (size_t p = 0; p < cmd.size();) {
    size_t z = cmd.find('\0', p);
    if (z == std::string::npos) z = cmd.size();
    argv.emplace_back(cmd, p, z - p);
    p = z + 1;
  }
  return argv;
}

void write_env(JsonWriter& w) {
  std::vector<std::pair<std::string, std::string>> env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    std::string name(*e, size_t(eq - *e));
    if (is_interesting_env(name)) env.emplace_back(name, redact_env_value(name, eq + 1));
  }
  std::sort(env.begin(), env.end());
  w.Key(key::kEnv);
  w.StartObject();
  for (auto& kv : env) {
    w.Key(kv.first.c_str());
    w.String(kv.second);
  }
  w.EndObject();
}

int collect_modules(struct dl_phdr_info* info, size_t, void* data) {
  auto* v = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name && info->dlpi_name[0]) v->push_back(info->dlpi_name);
  return 0;
}

void write_devices_and_modules(JsonWriter& w, const DeviceReport& d) {
  w.Key(key::kDriverVersion); d.driver_version ? w.Int(d.driver_version) : w.Null();
  w.Key(key::kRuntimeVersion); d.runtime_version ? w.Int(d.runtime_version) : w.Null();
  w.Key(key::kDevices);
  w.StartArray();
  for (const auto& dev : d.devices) {
    w.StartObject();
    w.Key(key::kDeviceId); w.Int(dev.device_id);
    w.Key(key::kName); w.String(dev.name);
    w.Key(key::kTotalBytes); w.Uint64(dev.total_bytes);
    w.EndObject();
  }
  w.EndArray();
  std::vector<std::string> modules;
  dl_iterate_phdr(collect_modules, &modules);
  w.Key(key::kModules);
  w.StartArray();
  for (auto& m : modules) w.String(m);
  w.EndArray();
}

// Stormlog/gpumemprof's `system` block (their get_system_info()), with our
// meanings: what the kernel and the driver say, no Python involved.
void write_system(JsonWriter& w, const BundleInput& in) {
  struct utsname u;
  const bool have_uname = uname(&u) == 0;
  const DeviceReport& d = in.devices;
  w.Key(key::kSystem);
  w.StartObject();
  w.Key(key::kPlatform); w.String(have_uname ? u.sysname : "Linux");
  w.Key(key::kArchitecture); have_uname ? w.String(u.machine) : w.Null();
  w.Key(key::kKernelRelease); have_uname ? w.String(u.release) : w.Null();
  w.Key(key::kDetectedBackend); w.String(backend_name(in.backend));
  w.Key(key::kDriverVersion); d.driver_version ? w.Int(d.driver_version) : w.Null();
  w.Key(key::kRuntimeVersion); d.runtime_version ? w.Int(d.runtime_version) : w.Null();
  w.Key(key::kGpuCount); w.Uint64(d.devices.size());
  w.Key(key::kGpuName); d.devices.empty() ? w.Null() : w.String(d.devices.front().name);
  w.Key(key::kCpuCount); w.Int64(sysconf(_SC_NPROCESSORS_ONLN));
  w.Key(key::kMemoryTotal); w.Uint64(uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE)));
  w.EndObject();
}

void write_config(JsonWriter& w, const Config& c, const char* symbolizer) {
  w.Key(key::kConfig);
  w.StartObject();
  w.Key(key::kDir); w.String(c.dir);
  w.Key(key::kRingEvents); w.Uint64(c.ring_events);
  w.Key(key::kStackDepth); w.Int(c.stack_depth);
  w.Key(key::kEpisodeMs); w.Uint64(c.episode_ms);
  w.Key(key::kMaxDumps); w.Uint64(c.max_dumps);
  w.Key(key::kMaxTotalMb); w.Uint64(c.max_total_mb);
  w.Key(key::kPythonStacks); w.Bool(c.python_stacks);
  w.Key(key::kSymbolizer); w.String(symbolizer);
  w.Key(key::kUnwinder); w.String(stack_capture_backend());
  w.EndObject();
}

}  // namespace

bool write_environment_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  OutFile file(files, file::kEnvironment);
  if (file.ok()) {
    JsonWriter w(file.out());
    w.StartObject();
    w.Key(key::kPid); w.Int(getpid());
    w.Key(key::kPpid); w.Int(getppid());
    char cwd[PATH_MAX] = {};
    w.Key(key::kCwd); w.String(getcwd(cwd, sizeof cwd) ? cwd : "");
    w.Key(key::kCmdline);
    w.StartArray();
    for (const std::string& a : redact_cmdline(read_cmdline())) w.String(a);
    w.EndArray();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    w.Key(key::kHostname); w.String(host);
    w.Key(key::kUid); w.Uint(getuid());
    write_devices_and_modules(w, c.in.devices);
    write_system(w, c.in);
    write_env(w);
    write_config(w, c.in.recorder->cfg, c.symbolizer);
    w.EndObject();
  }
  return file.finish(error);
}

}  // namespace gpumemrec
