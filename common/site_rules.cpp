#include "common/site_rules.h"

#include <fnmatch.h>

#include <cstdlib>
#include <cstring>

#include "common/config.h"
#include "common/frame_order.h"

namespace gpumemrec::site {

namespace {

using model::Frame;
using model::FrameKind;

struct LibraryRule {
  const char* glob;  // fnmatch(3) pattern on the module's basename
  FrameClass cls;
};

// The libraries whose frames are not the user's code. Matched against the
// module's basename (the loaded object's file name, version suffixes
// included). The order matters only where two rows could match one name.
constexpr LibraryRule kLibraryRules[] = {
    // CUDA/HIP runtime and driver, and this recorder.
    {"libcuda.so*", FrameClass::kRuntime},
    {"libcudart.so*", FrameClass::kRuntime},
    {"libcudart_static*", FrameClass::kRuntime},
    {"libnvidia-*", FrameClass::kRuntime},
    {"libamdhip64.so*", FrameClass::kRuntime},
    {"libhsa-runtime64.so*", FrameClass::kRuntime},
    {"libamd_comgr.so*", FrameClass::kRuntime},
    {"libgpumemrec.so*", FrameClass::kRuntime},
    // Sanitizer runtimes: their interceptors (backtrace, malloc) sit between
    // the recorder's stack capture and the program when a build is
    // instrumented; never the user's code, never the library that asked.
    {"libasan.so*", FrameClass::kRuntime},
    {"libtsan.so*", FrameClass::kRuntime},
    {"libubsan.so*", FrameClass::kRuntime},
    {"liblsan.so*", FrameClass::kRuntime},
    {"libclang_rt.*", FrameClass::kRuntime},
    // Foreign-call glue: Python's ctypes and libffi.
    {"libffi.so*", FrameClass::kGlue},
    {"_ctypes.*so*", FrameClass::kGlue},
    // Frameworks and the vendor libraries they call.
    {"libc10*", FrameClass::kFramework},
    {"libtorch*", FrameClass::kFramework},
    {"libshm.so*", FrameClass::kFramework},
    {"_C.cpython-*", FrameClass::kFramework},
    {"libxla*", FrameClass::kFramework},
    {"xla_extension*", FrameClass::kFramework},
    {"libjax*", FrameClass::kFramework},
    {"_jax*.so*", FrameClass::kFramework},
    // JAX's GPU backends are PJRT plugins: jax_plugins/xla_cuda13/
    // xla_cuda_plugin.so holds XLA's allocators (seen on an H200, 2026-11-26).
    {"xla_*_plugin.so*", FrameClass::kFramework},
    {"libcupy*", FrameClass::kFramework},
    {"libcublas*", FrameClass::kFramework},
    {"libcudnn*", FrameClass::kFramework},
    {"libnccl*", FrameClass::kFramework},
    {"librccl*", FrameClass::kFramework},
    {"libcufft*", FrameClass::kFramework},
    {"libcurand*", FrameClass::kFramework},
    {"libcusparse*", FrameClass::kFramework},
    {"libcusolver*", FrameClass::kFramework},
    {"libnvrtc*", FrameClass::kFramework},
    {"libnvJitLink*", FrameClass::kFramework},
    {"librocblas*", FrameClass::kFramework},
    {"libhipblas*", FrameClass::kFramework},
    {"libMIOpen*", FrameClass::kFramework},
    // The interpreter.
    {"libpython*", FrameClass::kInterpreter},
    {"python", FrameClass::kInterpreter},
    {"python[0-9]*", FrameClass::kInterpreter},
    // The C and C++ runtime and the dynamic loader.
    {"libc.so*", FrameClass::kSystem},
    {"libc-*", FrameClass::kSystem},
    {"libpthread*", FrameClass::kSystem},
    {"libstdc++*", FrameClass::kSystem},
    {"libc++*", FrameClass::kSystem},
    {"libgcc_s*", FrameClass::kSystem},
    {"ld-linux*", FrameClass::kSystem},
    {"ld64.so*", FrameClass::kSystem},
};

// Module paths of Python extensions that belong to a framework whatever
// their file name (CuPy's Cython modules: cupy/_core/core.cpython-312-...so).
constexpr const char* kFrameworkPathGlobs[] = {"*/cupy/*", "*/cupy_backends/*", "*/jaxlib/*", "*/jax_plugins/*",
                                               "*/torch/lib/*"};

// Functions of the CUDA runtime linked into the program itself (nvcc's
// default, `-cudart static`): their module is the program, so only their
// names tell them apart. Seen on an H200 with CUDA 13.0 (docs/validation/):
// the static runtime's internal functions are named
// `libcudart_static_<hash>`, and older toolkits' `__cudart<N>`; the API
// entry points keep their names (cudaMalloc, cudaMallocAsync, ...). Only
// the allocation entry points are listed: a user's own `cudaCheck` helper
// stays the user's.
constexpr const char* kRuntimeFunctionGlobs[] = {"libcudart_static_*", "__cudart[0-9]*", "cudaMalloc*",
                                                 "cudaHostAlloc*", "cudaMemPool*"};

std::string_view base_name(std::string_view p) {
  size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

// `text` is NUL-terminated (a std::string's c_str() or a suffix of one):
// no copy per match, this runs for every frame of every stack of a bundle.
bool glob(const char* pattern, const char* text) { return *text && fnmatch(pattern, text, 0) == 0; }

const char* base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return path.c_str() + (slash == std::string::npos ? 0 : slash + 1);
}

// The part of a path after "/site-packages/" or "/dist-packages/", or npos.
size_t packages_end(std::string_view file) {
  for (std::string_view dir : {std::string_view("/site-packages/"), std::string_view("/dist-packages/")}) {
    size_t at = file.find(dir);
    if (at != std::string_view::npos) return at + dir.size();
  }
  return std::string_view::npos;
}

// ".../lib/python3.12/..." or ".../lib64/python3.12/...": the stdlib's
// install layout (sysconfig's "stdlib" path).
bool under_stdlib(std::string_view file) {
  for (std::string_view lib : {std::string_view("/lib/python"), std::string_view("/lib64/python")}) {
    size_t at = file.find(lib);
    if (at == std::string_view::npos) continue;
    size_t i = at + lib.size();
    if (i < file.size() && file[i] >= '0' && file[i] <= '9' && file.find('/', i) != std::string_view::npos) return true;
  }
  return false;
}

bool python_library_file(std::string_view file) {
  if (file.substr(0, 8) == "<frozen ") return true;
  return packages_end(file) != std::string_view::npos || under_stdlib(file);
}

FrameClass native_class(const Frame& f) {
  const char* base = base_of(f.module);
  if (!*base) return FrameClass::kUser;
  for (const LibraryRule& r : kLibraryRules)
    if (glob(r.glob, base)) return r.cls;
  for (const char* g : kFrameworkPathGlobs)
    if (glob(g, f.module.c_str())) return FrameClass::kFramework;
  for (const char* g : kRuntimeFunctionGlobs)
    if (glob(g, f.function.c_str())) return FrameClass::kRuntime;
  return FrameClass::kUser;
}

bool user_skips(const std::vector<std::string>& patterns, const Frame& f) {
  for (const std::string& p : patterns) {
    const char* g = p.c_str();
    if (glob(g, base_of(f.module)) || glob(g, f.module.c_str()) || glob(g, f.file.c_str()) ||
        glob(g, f.function.c_str()))
      return true;
  }
  return false;
}

}  // namespace

const char* frame_class_name(FrameClass c) {
  switch (c) {
    case FrameClass::kUser: return "user";
    case FrameClass::kRuntime: return "runtime";
    case FrameClass::kGlue: return "glue";
    case FrameClass::kFramework: return "framework";
    case FrameClass::kInterpreter: return "interpreter";
    case FrameClass::kSystem: return "system";
    case FrameClass::kPythonLib: return "python_library";
    case FrameClass::kSkipped: return "skipped";
  }
  return "user";
}

FrameClass Rules::classify(const Frame& f) const {
  FrameClass c = FrameClass::kUser;
  if (f.kind == FrameKind::kPython) c = python_library_file(f.file) ? FrameClass::kPythonLib : FrameClass::kUser;
  else c = native_class(f);
  if (c == FrameClass::kUser && !skip_.empty() && user_skips(skip_, f)) c = FrameClass::kSkipped;
  return c;
}

const Rules& rules_from_environment() {
  static const Rules rules = [] {
    std::vector<std::string> patterns;
    std::string why;
    const char* v = std::getenv("GPUMEMREC_SITE_SKIP");
    if (v && !parse_site_skip(v, &patterns, &why)) patterns.clear();
    return Rules(std::move(patterns));
  }();
  return rules;
}

namespace {

std::vector<FrameClass> classes_of(const model::Stack& s, const Rules& r) {
  std::vector<FrameClass> c;
  c.reserve(s.frames.size());
  for (const Frame& f : s.frames) c.push_back(r.classify(f));
  return c;
}

int64_t site_index(const model::Stack& s, const std::vector<FrameClass>& c) {
  for (size_t i = 0; i < s.frames.size(); ++i)
    if (c[i] == FrameClass::kUser) return int64_t(i);
  for (size_t i = 0; i < s.frames.size(); ++i)
    if (s.frames[i].kind == FrameKind::kPython) return int64_t(i);
  return s.frames.empty() ? -1 : 0;
}

std::string library_of(const model::Stack& s, const std::vector<FrameClass>& c) {
  for (size_t i = 0; i < s.frames.size(); ++i) {
    const Frame& f = s.frames[i];
    if (f.kind != FrameKind::kNative || f.module.empty()) continue;
    if (c[i] == FrameClass::kRuntime || c[i] == FrameClass::kGlue) continue;
    return module_display_name(f.module);
  }
  return "";
}

}  // namespace

int64_t site_frame_index(const model::Stack& s, const Rules& r) { return site_index(s, classes_of(s, r)); }

std::string owning_library(const model::Stack& s, const Rules& r) { return library_of(s, classes_of(s, r)); }

void attribute(model::Stack* s, const Rules& r) {
  const std::vector<FrameClass> c = classes_of(*s, r);
  s->site_frame = site_index(*s, c);
  s->library = library_of(*s, c);
  s->attributed = true;
}

const model::Frame* site_frame_of(const model::Stack& s) {
  if (s.frames.empty()) return nullptr;
  if (s.site_frame >= 0 && size_t(s.site_frame) < s.frames.size()) return &s.frames[size_t(s.site_frame)];
  return &s.frames[size_t(site_frame_index(s, rules_from_environment()))];
}

std::string module_display_name(const std::string& module) {
  const std::string_view base = base_name(module);
  // A Python extension module's file name ends in its ABI tag
  // (PEP 3149: ".cpython-312-x86_64-linux-gnu.so"; PEP 384: ".abi3.so").
  size_t tag = base.find(".cpython-");
  if (tag == std::string_view::npos) tag = base.find(".abi3.so");
  if (tag == std::string_view::npos || base.substr(base.size() - 3) != ".so") return std::string(base);
  const size_t pkg = packages_end(module);
  if (pkg == std::string::npos) return std::string(base.substr(0, tag));
  // The import name: the path below site-packages, dotted.
  std::string name = module.substr(pkg, module.size() - pkg - (base.size() - tag));
  for (char& ch : name)
    if (ch == '/') ch = '.';
  return name;
}

std::string frame_owner(const Frame& f) {
  if (f.kind != FrameKind::kPython) return module_display_name(f.module);
  if (f.file.substr(0, 8) == "<frozen ") return "python stdlib";
  const size_t pkg = packages_end(f.file);
  if (pkg != std::string::npos) {
    const size_t end = f.file.find('/', pkg);
    std::string name = f.file.substr(pkg, end == std::string::npos ? std::string::npos : end - pkg);
    return end == std::string::npos ? std::string(base_name(name)) : name;
  }
  return under_stdlib(f.file) ? "python stdlib" : std::string(base_name(f.file));
}

std::vector<FoldedLine> fold_frames(const model::Stack& s, const Rules& r) {
  std::vector<FoldedLine> out;
  const std::vector<FrameClass> c = classes_of(s, r);
  const int64_t site = s.site_frame >= 0 && size_t(s.site_frame) < s.frames.size() ? s.site_frame : site_index(s, c);
  size_t i = 0;
  while (i < s.frames.size()) {
    size_t j = i;
    while (j < s.frames.size() && int64_t(j) != site && c[j] != FrameClass::kUser) ++j;
    if (j - i >= 2) {
      FoldedLine l{i, j - i, "", false};
      std::vector<std::string> seen;
      for (size_t k = i; k < j; ++k) {
        std::string o = frame_owner(s.frames[k]);
        if (o.empty()) o = "?";
        bool dup = false;
        for (const std::string& x : seen) dup = dup || x == o;
        if (!dup) seen.push_back(o);
      }
      for (size_t k = 0; k < seen.size(); ++k) l.owners += (k ? ", " : "") + seen[k];
      out.push_back(std::move(l));
      i = j;
      continue;
    }
    if (j == i) j = i + 1;  // a user frame or the site frame
    for (size_t k = i; k < j; ++k) out.push_back({k, 1, "", int64_t(k) == site});
    i = j;
  }
  return out;
}

std::string folded_text(const FoldedLine& l) {
  return "[" + std::to_string(l.count) + " frames in " + l.owners + "]";
}

}  // namespace gpumemrec::site
