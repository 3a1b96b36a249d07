#include "shim/dump/query/symbolizer.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdlib>

#include "shim/base/hook_table.h"
#include "shim/base/loader_guard.h"

namespace gpumemrec {

std::string demangle(const char* name) {
  if (!name || !*name) return "";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && d) {
    std::string s(d);
    std::free(d);
    return s;
  }
  std::free(d);
  return name;
}

struct Symbolizer::Impl {
  bool loaded = false;
  void* handle = nullptr;
  decltype(&dwfl_begin) begin = nullptr;
  decltype(&dwfl_end) end = nullptr;
  decltype(&dwfl_linux_proc_report) proc_report = nullptr;
  decltype(&dwfl_report_begin) report_begin = nullptr;
  decltype(&dwfl_report_end) report_end = nullptr;
  decltype(&dwfl_addrmodule) addrmodule = nullptr;
  decltype(&dwfl_module_addrname) addrname = nullptr;
  decltype(&dwfl_module_getsrc) getsrc = nullptr;
  decltype(&dwfl_lineinfo) lineinfo = nullptr;
  decltype(&dwfl_module_info) module_info = nullptr;
  Dwfl_Callbacks callbacks{};
  Dwfl* dwfl = nullptr;
  char* debuginfo_path = nullptr;

  bool load() {
    if (loaded) return handle != nullptr;
    loaded = true;
    handle = guarded_dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);  // on the writer: see loader_guard.h
    if (!handle) return false;
    auto sym = [&](const char* n) { return real_dlsym()(handle, n); };
    begin = reinterpret_cast<decltype(begin)>(sym("dwfl_begin"));
    end = reinterpret_cast<decltype(end)>(sym("dwfl_end"));
    proc_report = reinterpret_cast<decltype(proc_report)>(sym("dwfl_linux_proc_report"));
    report_begin = reinterpret_cast<decltype(report_begin)>(sym("dwfl_report_begin"));
    report_end = reinterpret_cast<decltype(report_end)>(sym("dwfl_report_end"));
    addrmodule = reinterpret_cast<decltype(addrmodule)>(sym("dwfl_addrmodule"));
    addrname = reinterpret_cast<decltype(addrname)>(sym("dwfl_module_addrname"));
    getsrc = reinterpret_cast<decltype(getsrc)>(sym("dwfl_module_getsrc"));
    lineinfo = reinterpret_cast<decltype(lineinfo)>(sym("dwfl_lineinfo"));
    module_info = reinterpret_cast<decltype(module_info)>(sym("dwfl_module_info"));
    callbacks.find_elf = reinterpret_cast<decltype(callbacks.find_elf)>(sym("dwfl_linux_proc_find_elf"));
    // Separate debug information by build ID only (/usr/lib/debug/.build-id,
    // where Debian's -dbgsym and Fedora's -debuginfo packages put it), not
    // dwfl_standard_find_debuginfo: after the local search that one asks
    // debuginfod (elfutils libdwfl/find-debuginfo.c, debuginfod-client.c),
    // whose debuginfod_begin runs curl_global_init (not thread-safe; it
    // initialises OpenSSL: seen crashing on the writer thread once exit had
    // run OpenSSL's cleanup) and, with DEBUGINFOD_URLS set (Ubuntu and Fedora
    // set it by default), downloads from the network in the middle of a
    // dump. The price: a .gnu_debuglink-only debug file is not found.
    callbacks.find_debuginfo =
        reinterpret_cast<decltype(callbacks.find_debuginfo)>(sym("dwfl_build_id_find_debuginfo"));
    callbacks.debuginfo_path = &debuginfo_path;
    if (!begin || !end || !proc_report || !report_begin || !report_end || !addrmodule || !addrname || !getsrc ||
        !lineinfo || !module_info || !callbacks.find_elf || !callbacks.find_debuginfo) {
      handle = nullptr;
      return false;
    }
    return true;
  }
};

Symbolizer::Symbolizer() : impl_(new Impl) {}
Symbolizer::~Symbolizer() {
  end();
  delete impl_;
}

const char* Symbolizer::backend() const { return impl_->handle ? "libdw" : "dladdr"; }

void Symbolizer::begin() {
  // Addresses are only meaningful for the modules loaded now: a library
  // unloaded since the last dump may have been replaced by another at the
  // same address. The cache lives for one dump.
  cache_.clear();
  Impl& d = *impl_;
  if (!d.load()) return;
  if (d.dwfl) return;
  d.dwfl = d.begin(&d.callbacks);
  if (!d.dwfl) return;
  d.report_begin(d.dwfl);
  if (d.proc_report(d.dwfl, getpid()) != 0) {
    d.end(d.dwfl);
    d.dwfl = nullptr;
    return;
  }
  d.report_end(d.dwfl, nullptr, nullptr);
}

void Symbolizer::end() {
  Impl& d = *impl_;
  if (d.dwfl) d.end(d.dwfl);
  d.dwfl = nullptr;
}

namespace {

// The main program's module: its real path (dladdr and libdwfl name it "" or
// by its argv[0]).
void fix_main_module(uint64_t pc, NativeFrameInfo* info) {
  if (!info->module.empty() && info->module[0] == '/') return;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  Dl_info dl{};
  if (n > 0 && dladdr(reinterpret_cast<void*>(pc), &dl) && dl.dli_fname &&
      (info->module.empty() || info->module == dl.dli_fname)) {
    exe[n] = '\0';
    if (info->module.empty() || std::string(dl.dli_fname).find('/') == std::string::npos) info->module = exe;
  }
}

}  // namespace

const NativeFrameInfo& Symbolizer::describe(uint64_t ip) {
  auto it = cache_.find(ip);
  if (it != cache_.end() && it->second.named) return it->second.info;
  NativeFrameInfo info;
  const uint64_t pc = ip ? ip - 1 : 0;  // inside the call instruction
  Impl& d = *impl_;
  bool done = false;
  if (d.dwfl) {
    if (Dwfl_Module* m = d.addrmodule(d.dwfl, pc)) {
      Dwarf_Addr start = 0;
      const char* name = d.module_info(m, nullptr, &start, nullptr, nullptr, nullptr, nullptr, nullptr);
      info.module = name ? name : "";
      info.offset = pc - start;
      info.function = demangle(d.addrname(m, pc));
      if (Dwfl_Line* line = d.getsrc(m, pc)) {
        int lineno = 0;
        const char* file = d.lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
        if (file) info.file = file;
        info.line = lineno;
      }
      done = true;
    }
  }
  if (!done) {
    Dl_info dl{};
    if (dladdr(reinterpret_cast<void*>(pc), &dl) && dl.dli_fname) {
      info.module = dl.dli_fname;
      info.offset = pc - reinterpret_cast<uint64_t>(dl.dli_fbase);
      if (dl.dli_sname) info.function = demangle(dl.dli_sname);
    }
  }
  fix_main_module(pc, &info);
  Entry& e = cache_[ip];
  e.info = std::move(info);
  e.named = true;
  return e.info;
}

const NativeFrameInfo& Symbolizer::module_of(uint64_t ip) {
  auto it = cache_.find(ip);
  if (it != cache_.end()) return it->second.info;
  NativeFrameInfo info;
  const uint64_t pc = ip ? ip - 1 : 0;
  Impl& d = *impl_;
  Dwfl_Module* m = d.dwfl ? d.addrmodule(d.dwfl, pc) : nullptr;
  if (m) {
    Dwarf_Addr start = 0;
    const char* name = d.module_info(m, nullptr, &start, nullptr, nullptr, nullptr, nullptr, nullptr);
    info.module = name ? name : "";
    info.offset = pc - start;
  } else {
    Dl_info dl{};
    if (dladdr(reinterpret_cast<void*>(pc), &dl) && dl.dli_fname) {
      info.module = dl.dli_fname;
      info.offset = pc - reinterpret_cast<uint64_t>(dl.dli_fbase);
    }
  }
  fix_main_module(pc, &info);
  return cache_.emplace(ip, Entry{std::move(info), false}).first->second.info;
}

}  // namespace gpumemrec
