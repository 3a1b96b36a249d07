// Who holds the memory, in the user's terms: which frame of a stack names
// its allocation site, and which library asked for the memory.
//
// The rule is data: one table (kLibraryRules in site_rules.cpp) of the
// runtime, framework, interpreter and system libraries whose frames are not
// the user's code, plus the Python path rules below, plus the user's own
// glob patterns (GPUMEMREC_SITE_SKIP). docs/design.md ("Who holds the
// memory") documents it; docs/bundle-format.md the keys it fills
// (stacks.json `site_frame`, `library`).
//
//  - A native frame is the user's unless its module (basename) matches a
//    row of the table.
//  - A Python frame is the user's unless its file is the interpreter's
//    standard library or an installed package: a path with a
//    `site-packages/` or `dist-packages/` component, a path under
//    `.../lib/pythonX.Y/` (or `lib64/`), or a frozen module (`<frozen ...>`).
//    The shim cannot read sys.prefix without libpython, so the stdlib is
//    recognised by its install layout (Lib/site.py and sysconfig's
//    "stdlib" path, `{installed_base}/lib/python{py_version_short}`).
//  - A GPUMEMREC_SITE_SKIP pattern (fnmatch(3), `*` crosses `/`) skips a
//    frame whose module basename, module path, Python file or function
//    name it matches.
//  - The site frame is the innermost user frame; failing that the innermost
//    Python frame; failing that the innermost frame.
//  - The owning library is the module basename of the first native frame
//    (innermost first) outside the CUDA/HIP runtime and driver and outside
//    the foreign-call glue (libffi, _ctypes): libnccl.so.2, libcublas.so.12,
//    libc10_cuda.so, or the program itself (python3.12 for a ctypes call).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/bundle_model.h"

namespace gpumemrec::site {

enum class FrameClass : uint8_t {
  kUser,         // the program's own code
  kRuntime,      // CUDA/HIP runtime and driver (and this recorder)
  kGlue,         // foreign-call glue between Python and native code (libffi, _ctypes)
  kFramework,    // libc10*, libtorch*, XLA/jaxlib, CuPy, cuBLAS, cuDNN, NCCL ...
  kInterpreter,  // libpython, the python executable
  kSystem,       // libc, libstdc++, libgcc_s, the dynamic loader
  kPythonLib,    // a Python frame in the stdlib or in site-/dist-packages
  kSkipped,      // matched a GPUMEMREC_SITE_SKIP pattern
};

// "runtime", "framework", ... (docs and tests).
const char* frame_class_name(FrameClass c);

class Rules {
 public:
  Rules() = default;
  explicit Rules(std::vector<std::string> skip_patterns) : skip_(std::move(skip_patterns)) {}
  FrameClass classify(const model::Frame& f) const;
  const std::vector<std::string>& skip_patterns() const { return skip_; }

 private:
  std::vector<std::string> skip_;
};

// The rules with GPUMEMREC_SITE_SKIP read from the environment (the tools,
// for bundles written before the shim stored the attribution).
const Rules& rules_from_environment();

// Index of the site frame in s.frames; -1 for an empty stack.
int64_t site_frame_index(const model::Stack& s, const Rules& r);
// The owning library's module basename; "" when no native frame is outside
// the runtime (a stack of runtime frames only, or no native frames).
std::string owning_library(const model::Stack& s, const Rules& r);
// Fills s->site_frame and s->library.
void attribute(model::Stack* s, const Rules& r);
// The site frame of a stack (its stored index when valid), or null.
const model::Frame* site_frame_of(const model::Stack& s);

// How a native module is named to people: its file name, except for a
// Python extension module, named by its import name
// (".../site-packages/cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so"
// is "cupy_backends.cuda.api.runtime"; outside site-/dist-packages the
// file name without its ABI tag).
std::string module_display_name(const std::string& module);

// One line of a folded stack: a frame shown as it is, or a run of frames
// that are not the user's ("[14 frames in libtorch_cuda.so, libc10_cuda.so]").
struct FoldedLine {
  size_t first = 0;  // index into s.frames
  size_t count = 1;  // 1 = the frame itself
  std::string owners;  // for a run: the distinct modules / packages, innermost first
  bool is_site = false;
};
// The stack's frames, innermost first, with every run of two or more
// consecutive non-user frames folded into one line. The site frame is never
// folded.
std::vector<FoldedLine> fold_frames(const model::Stack& s, const Rules& r);
// "[14 frames in libtorch_cuda.so, libc10_cuda.so]"
std::string folded_text(const FoldedLine& l);

// Where a frame comes from in a folded run: a module basename, a Python
// package ("torch" for .../site-packages/torch/...) or "python stdlib".
std::string frame_owner(const model::Frame& f);

}  // namespace gpumemrec::site
