#include "tools/simulate_setup.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/format.h"
#include "core/profile.h"
#include "tools/cli.h"

namespace gpumemrec::cli {
namespace {

// In the order the recorder's own loader uses (shim/base/simulated_libraries.cpp).
const char* const kLibraries[] = {"libcuda.so.1",    "libnvidia-ml.so.1", "libcudart.so.13", "libcublasLt.so.13",
                                  "libcublas.so.13", "libcudnn.so.9",     "libnccl.so.2"};

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The file execvp would run for cmd[0] ("" when not found: the run says so).
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t colon = p.find(':', pos);
    if (colon == std::string::npos) colon = p.size();
    std::string dir = p.substr(pos, colon - pos);
    if (dir.empty()) dir = ".";
    const std::string cand = dir + "/" + name;
    if (access(cand.c_str(), X_OK) == 0) return cand;
    pos = colon + 1;
  }
  return "";
}

// NVIDIA's CUDA runtime, linked statically into a program (nvcc's default),
// asks the driver for its private export tables (cuGetExportTable); the
// simulated runtime never does. An ELF file naming that function carries
// NVIDIA's runtime.
bool carries_nvidia_runtime(const std::string& file) {
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool found = false;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 4) {
    void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      const char* b = static_cast<const char*>(m);
      static const char kNeedle[] = "cuGetExportTable";
      found = memcmp(b, "\x7f" "ELF", 4) == 0 &&
              memmem(b, static_cast<size_t>(st.st_size), kNeedle, sizeof kNeedle - 1) != nullptr;
      munmap(m, static_cast<size_t>(st.st_size));
    }
  }
  close(fd);
  return found;
}

const sim::Profile* checked_profile(const std::string& spec, int* count) {
  const sim::Profile* p = nullptr;
  if (sim::parse_simulate(spec.c_str(), &p, count)) return p;
  const size_t colon = spec.find(':');
  if (colon != std::string::npos && sim::find_profile(spec.c_str(), colon) != nullptr)
    throw CliError(kBadInput, "--simulate " + spec + ": the count after ':' must be 1 to 64 devices");
  throw CliError(kBadInput, "--simulate " + spec + ": no such simulated card ('gpumemrec simulate --list' lists them)");
}

}  // namespace

void setup_simulation(const std::string& spec, const std::string& library, const std::vector<std::string>& command) {
  int count = 0;
  checked_profile(spec, &count);
  const std::string dir = dir_of(library) + "/simulate";
  for (const char* lib : {"libcuda.so.1", "libcudart.so.13"})
    if (!exists(dir + "/" + lib))
      throw CliError(kBadInput, "--simulate: the simulated CUDA libraries are not installed beside " + library +
                                    " (no " + dir + "/" + lib + ")");
  const std::string program = resolve_program(command.at(0));
  if (!program.empty() && carries_nvidia_runtime(program))
    throw CliError(kBadInput, "--simulate: " + program +
                                  " carries NVIDIA's own CUDA runtime (linked statically), which cannot run on a "
                                  "simulated card; build it with `nvcc -cudart shared` so that it loads "
                                  "libcudart.so.13 by name");
  setenv("GPUMEMREC_SIMULATE", spec.c_str(), 1);
  // After the recorder (LD_PRELOAD order is symbol order: its hooks come
  // first), ahead of the program's own libraries.
  std::string preload;
  for (const char* lib : kLibraries)
    if (exists(dir + "/" + lib)) preload += (preload.empty() ? "" : ":") + dir + "/" + lib;
  const char* old = getenv("LD_PRELOAD");
  std::string joined = old && *old ? std::string(old) : "";
  const size_t first = joined.find(':');
  // LD_PRELOAD already starts with the recorder (run put it there): insert after it.
  const std::string head = joined.substr(0, first);
  const std::string tail = first == std::string::npos ? "" : joined.substr(first + 1);
  std::string value = head.empty() ? preload : head + ":" + preload;
  if (!tail.empty()) value += ":" + tail;
  setenv("LD_PRELOAD", value.c_str(), 1);
}

std::string simulate_list_text() {
  size_t n = 0;
  const sim::Profile* ps = sim::profiles(&n);
  std::string out;
  char line[256];
  for (size_t i = 0; i < n; ++i) {
    const sim::Profile& p = ps[i];
    snprintf(line, sizeof line, "%-14s %-26s %10s  CC %d.%d  %3d SMs\n", p.id, p.name,
             format_bytes(p.total_bytes).c_str(), p.cc_major, p.cc_minor, p.sm_count);
    out += line;
  }
  return out;
}

std::string simulate_list_json() {
  size_t n = 0;
  const sim::Profile* ps = sim::profiles(&n);
  std::string out = "[";
  char item[768];
  for (size_t i = 0; i < n; ++i) {
    const sim::Profile& p = ps[i];
    snprintf(item, sizeof item,
             "%s\n  {\"id\": \"%s\", \"name\": \"%s\", \"total_bytes\": %llu, \"nvml_total_bytes\": %llu, "
             "\"compute_capability\": \"%d.%d\", \"sm_count\": %d, \"l2_bytes\": %d, \"context_bytes\": %llu, "
             "\"driver_reserved_bytes\": %llu}",
             i ? "," : "", p.id, p.name, static_cast<unsigned long long>(p.total_bytes),
             static_cast<unsigned long long>(p.nvml_total_bytes), p.cc_major, p.cc_minor, p.sm_count, p.l2_bytes,
             static_cast<unsigned long long>(p.context_bytes), static_cast<unsigned long long>(p.driver_reserved_bytes));
    out += item;
  }
  return out + "\n]\n";
}

}  // namespace gpumemrec::cli
