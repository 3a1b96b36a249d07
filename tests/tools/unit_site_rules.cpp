// The site rules (common/site_rules.h) and the card accounting
// (common/card_accounting.h): which frame names a site, which library owns
// it, how stacks fold, and how a device's bytes add up.
#include <gtest/gtest.h>

#include "common/card_accounting.h"
#include "common/config.h"
#include "common/site_rules.h"

using namespace gpumemrec;
using model::Frame;
using model::FrameKind;
using model::Stack;

namespace {

Frame native(const std::string& module, const std::string& function) {
  Frame f;
  f.kind = FrameKind::kNative;
  f.module = module;
  f.function = function;
  return f;
}

Frame python(const std::string& file, const std::string& function, int line) {
  Frame f;
  f.kind = FrameKind::kPython;
  f.file = file;
  f.function = function;
  f.line = line;
  return f;
}

// A PyTorch-shaped stack, innermost first: the driver, the runtime, the
// caching allocator, the Python binding, the interpreter, torch's Python
// code, the user's line, the interpreter's loop.
Stack torch_stack() {
  Stack s;
  s.frames = {native("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "cuMemAlloc_v2"),
              native("/venv/lib/python3.12/site-packages/torch/lib/libcudart.so.12", "cudaMalloc"),
              native("/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so", "alloc_block"),
              native("/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so", "malloc"),
              native("/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", "empty_cuda"),
              native("/venv/lib/python3.12/site-packages/torch/lib/libtorch_python.so", "THPVariable_randn"),
              native("/usr/bin/python3.12", "_PyObject_MakeTpCall"),
              python("/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py", "forward", 117),
              python("/usr/lib/python3.12/contextlib.py", "inner", 81),
              python("/home/u/train.py", "step", 42),
              native("/usr/bin/python3.12", "_PyEval_EvalFrameDefault"),
              python("/home/u/train.py", "<module>", 90),
              native("/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_main")};
  return s;
}

TEST(SiteRules, TableClassifiesRuntimeFrameworkInterpreterAndPythonLibraries) {
  const site::Rules r;
  EXPECT_EQ(r.classify(native("/x/libcuda.so.1", "")), site::FrameClass::kRuntime);
  EXPECT_EQ(r.classify(native("/x/libamdhip64.so.6", "")), site::FrameClass::kRuntime);
  EXPECT_EQ(r.classify(native("/x/libffi.so.8.1.2", "")), site::FrameClass::kGlue);
  EXPECT_EQ(r.classify(native("/x/_ctypes.cpython-312-x86_64-linux-gnu.so", "")), site::FrameClass::kGlue);
  EXPECT_EQ(r.classify(native("/x/libnccl.so.2", "")), site::FrameClass::kFramework);
  EXPECT_EQ(r.classify(native("/x/libcublasLt.so.12", "")), site::FrameClass::kFramework);
  EXPECT_EQ(r.classify(native("/x/libcudnn_ops.so.9", "")), site::FrameClass::kFramework);
  EXPECT_EQ(r.classify(native("/x/xla_extension.so", "")), site::FrameClass::kFramework);
  EXPECT_EQ(r.classify(native("/x/cupy/_core/core.cpython-312-x86_64-linux-gnu.so", "")), site::FrameClass::kFramework);
  EXPECT_EQ(r.classify(native("/usr/lib/libpython3.12.so.1.0", "")), site::FrameClass::kInterpreter);
  EXPECT_EQ(r.classify(native("/usr/bin/python3.12", "")), site::FrameClass::kInterpreter);
  EXPECT_EQ(r.classify(native("/lib/libc.so.6", "")), site::FrameClass::kSystem);
  EXPECT_EQ(r.classify(native("/home/u/app", "main")), site::FrameClass::kUser);
  EXPECT_EQ(r.classify(native("", "")), site::FrameClass::kUser);  // unknown module: the user's
  EXPECT_EQ(r.classify(python("/usr/lib/python3.12/ctypes/__init__.py", "f", 1)), site::FrameClass::kPythonLib);
  EXPECT_EQ(r.classify(python("/v/lib64/python3.11/site-packages/x.py", "f", 1)), site::FrameClass::kPythonLib);
  EXPECT_EQ(r.classify(python("/usr/lib/python3/dist-packages/numpy/a.py", "f", 1)), site::FrameClass::kPythonLib);
  EXPECT_EQ(r.classify(python("<frozen importlib._bootstrap>", "f", 1)), site::FrameClass::kPythonLib);
  EXPECT_EQ(r.classify(python("/home/u/lib/python_tools/train.py", "f", 1)), site::FrameClass::kUser);
  EXPECT_EQ(r.classify(python("train.py", "f", 1)), site::FrameClass::kUser);
}

TEST(SiteRules, PyTorchStackIsNamedByTheUsersLineAndOwnedByTheAllocator) {
  Stack s = torch_stack();
  site::attribute(&s, site::Rules());
  ASSERT_EQ(s.site_frame, 9);
  EXPECT_EQ(s.frames[9].function, "step");
  EXPECT_EQ(s.library, "libc10_cuda.so");
  EXPECT_TRUE(s.attributed);
}

// nvcc's default links the CUDA runtime into the program: the stack an H200
// gave for cudaMalloc under CUDA 13.0 (docs/validation/2026-11-26), where
// the runtime's frames have the program as their module.
TEST(SiteRules, StaticRuntimeFramesInTheProgramAreNotTheSite) {
  const site::Rules r;
  Stack s;
  s.frames = {native("/w/cuda_static", "libcudart_static_5382377d5c772c9d197c0cda9fd9742ee6ad893c"),
              native("/w/cuda_static", "libcudart_static_f74e2f2bcf2cf49bd1a61332e1d15bd1e748f9cf"),
              native("/w/cuda_static", "cudaMalloc"),
              native("/w/cuda_static", "grab_device_memory(std::vector<void*>*, unsigned long)"),
              native("/w/cuda_static", "main"),
              native("/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_main")};
  EXPECT_EQ(site::site_frame_index(s, r), 3);
  EXPECT_EQ(site::owning_library(s, r), "cuda_static");
  EXPECT_EQ(r.classify(native("/w/old_static", "__cudart1234")), site::FrameClass::kRuntime);
  EXPECT_EQ(r.classify(native("/w/app", "cudaMalloc<float>(float**, unsigned long)")), site::FrameClass::kRuntime);
  // A user's helper whose name merely starts with "cuda" stays the user's.
  EXPECT_EQ(r.classify(native("/w/app", "cudaCheck(cudaError, char const*)")), site::FrameClass::kUser);
}

// JAX with the platform allocator on an H200 (jax 0.11.2,
// docs/validation/2026-11-26): XLA's allocator in the CUDA PJRT plugin,
// jaxlib's dispatch, the interpreter, jax's Python code, the user's line.
TEST(SiteRules, JaxStackIsNamedByTheUsersLineAndOwnedByThePlugin) {
  const site::Rules r;
  const std::string sp = "/venv/lib/python3.12/site-packages/";
  Stack s;
  s.frames = {native(sp + "jax_plugins/xla_cuda13/xla_cuda_plugin.so", "stream_executor::gpu::CreatePhysicalAllocation"),
              native(sp + "jax_plugins/xla_cuda13/xla_cuda_plugin.so", "pjrt::PJRT_LoadedExecutable_Execute"),
              native(sp + "jaxlib/libjax_common.so", "PjitFunction_tp_vectorcall"),
              native("/usr/bin/python3.12", "_PyEval_EvalFrameDefault"),
              python(sp + "jax/_src/dispatch.py", "apply_primitive", 88),
              python(sp + "jax/_src/numpy/array_creation.py", "ones", 144),
              python("/home/u/train.py", "grow", 42),
              native("/usr/bin/python3.12", "_PyEval_EvalFrameDefault")};
  EXPECT_EQ(site::site_frame_index(s, r), 6);
  EXPECT_EQ(site::owning_library(s, r), "xla_cuda_plugin.so");
  EXPECT_EQ(r.classify(native("/opt/x/xla_rocm_plugin.so", "")), site::FrameClass::kFramework);
}

// CuPy on an H200 (cupy 14.2, docs/validation/2026-11-26): the CUDA runtime
// is linked into CuPy's Cython runtime module, whose file name is its ABI
// tag; people know it by its import name.
TEST(SiteRules, CupyStackIsOwnedByTheExtensionModuleByItsImportName) {
  const site::Rules r;
  const std::string sp = "/venv/lib/python3.12/site-packages/";
  const std::string rt = sp + "cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so";
  Stack s;
  s.frames = {native(rt, "libcudart_static_5382377d5c772c9d197c0cda9fd9742ee6ad893c"),
              native(rt, "cudaMalloc"),
              native(rt, "__pyx_f_13cupy_backends_4cuda_3api_7runtime_malloc(unsigned long)"),
              native(sp + "cupy/cuda/memory.cpython-312-x86_64-linux-gnu.so", "__pyx_f_4cupy_4cuda_6memory_alloc"),
              native("/usr/bin/python3.12", "_PyObject_MakeTpCall"),
              python(sp + "cupy/_creation/basic.py", "empty", 34),
              python("/home/u/train.py", "grow", 52)};
  EXPECT_EQ(site::site_frame_index(s, r), 6);
  EXPECT_EQ(site::owning_library(s, r), "cupy_backends.cuda.api.runtime");
  const std::vector<site::FoldedLine> folded = site::fold_frames(s, r);
  ASSERT_FALSE(folded.empty());
  EXPECT_EQ(site::folded_text(folded[0]), "[6 frames in cupy_backends.cuda.api.runtime, cupy.cuda.memory, python3.12, cupy]");
  EXPECT_EQ(site::module_display_name("/build/ext/fast.abi3.so"), "fast");
  EXPECT_EQ(site::module_display_name(sp + "torch/lib/libc10_cuda.so"), "libc10_cuda.so");
  EXPECT_EQ(site::module_display_name(sp + "torch/_C.cpython-312-x86_64-linux-gnu.so"), "torch._C");
}

TEST(SiteRules, CtypesCallIsOwnedByTheProgram) {
  Stack s;
  s.frames = {native("/x/libcuda.so.1", "cuMemAlloc_v2"), native("/x/libffi.so.8", "ffi_call_unix64"),
              native("/x/_ctypes.cpython-312-x86_64-linux-gnu.so", "_ctypes_callproc"),
              native("/usr/bin/python3.12", "_PyObject_MakeTpCall"), python("/home/u/t.py", "grow", 7)};
  site::attribute(&s, site::Rules());
  EXPECT_EQ(s.site_frame, 4);
  EXPECT_EQ(s.library, "python3.12");
}

TEST(SiteRules, FallbacksInnermostPythonThenInnermost) {
  Stack py;
  py.frames = {native("/x/libcuda.so.1", "a"), python("/usr/lib/python3.12/x.py", "lib_fn", 3),
               python("/usr/lib/python3.12/y.py", "outer", 4)};
  EXPECT_EQ(site::site_frame_index(py, site::Rules()), 1);
  Stack nat;
  nat.frames = {native("/x/libcuda.so.1", "a"), native("/x/libcudart.so.12", "b")};
  EXPECT_EQ(site::site_frame_index(nat, site::Rules()), 0);
  EXPECT_EQ(site::owning_library(nat, site::Rules()), "");
  EXPECT_EQ(site::site_frame_index(Stack(), site::Rules()), -1);
}

TEST(SiteRules, SkipPatternsAddToTheTableAndMatchingEverythingFallsBack) {
  Stack s = torch_stack();
  // Every user frame skipped: the innermost Python frame (torch's forward).
  EXPECT_EQ(site::site_frame_index(s, site::Rules({"*/train.py"})), 7);
  Stack n;
  n.frames = {native("/x/libcuda.so.1", "a"), native("/home/u/libmyalloc.so", "pool_get"),
              native("/home/u/app", "train_step"), native("/home/u/app", "main")};
  EXPECT_EQ(site::site_frame_index(n, site::Rules()), 1);
  EXPECT_EQ(site::site_frame_index(n, site::Rules({"libmyalloc.so*"})), 2);
  EXPECT_EQ(site::site_frame_index(n, site::Rules({"train_*"})), 1);  // function names match too
  EXPECT_EQ(site::site_frame_index(n, site::Rules({"*"})), 0);       // everything skipped: innermost
  EXPECT_EQ(site::owning_library(n, site::Rules({"*"})), "libmyalloc.so");  // the library rule is the table's
}

TEST(SiteRules, FoldsRunsOfNonUserFramesButNeverTheSite) {
  Stack s = torch_stack();
  site::attribute(&s, site::Rules());
  const auto lines = site::fold_frames(s, site::Rules());
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0].count, 9u);
  EXPECT_EQ(site::folded_text(lines[0]),
            "[9 frames in libcuda.so.1, libcudart.so.12, libc10_cuda.so, libtorch_cuda.so, libtorch_python.so, "
            "python3.12, torch, python stdlib]");
  EXPECT_EQ(lines[1].first, 9u);
  EXPECT_TRUE(lines[1].is_site);
  size_t total = 0;
  for (const auto& l : lines) total += l.count;
  EXPECT_EQ(total, s.frames.size());
  // A single non-user frame stays as it is.
  Stack one;
  one.frames = {native("/x/libcuda.so.1", "a"), native("/home/u/app", "main")};
  EXPECT_EQ(site::fold_frames(one, site::Rules()).size(), 2u);
}

TEST(SiteSkipConfig, ParsesAndRejectsWithTheDefault) {
  std::vector<std::string> w;
  auto get = [](const char* v) { return [v](const char* n) -> const char* {
    return std::string(n) == "GPUMEMREC_SITE_SKIP" ? v : nullptr; }; };
  Config c = parse_config(get(" libmy*.so , ,*/pkg/* "), &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.site_skip, (std::vector<std::string>{"libmy*.so", "*/pkg/*"}));
  c = parse_config(get(" , "), &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("GPUMEMREC_SITE_SKIP"), std::string::npos);
  EXPECT_TRUE(c.site_skip.empty());
  w.clear();
  c = parse_config(get(std::string(300, 'a').c_str()), &w);
  EXPECT_EQ(w.size(), 1u);
  EXPECT_TRUE(c.site_skip.empty());
}

model::Bundle accounting_bundle() {
  model::Bundle b;
  Stack s;
  s.stack_id = 1;
  s.library = "libnccl.so.2";
  b.stacks.push_back(s);
  b.stack_index[1] = 0;
  model::Allocation a;
  a.device_id = 0;
  a.size = 400;
  a.stack_id = 1;
  a.memory_type = "physical";
  b.allocations.push_back(a);
  a.size = 100;
  a.stack_id = 0;
  a.memory_type = "device";
  b.allocations.push_back(a);
  a.memory_type = "mapping";  // the handle holds the memory: not counted twice
  b.allocations.push_back(a);
  return b;
}

TEST(CardAccounting, FiguresAddUpToTheTotal) {
  model::Bundle b = accounting_bundle();
  model::NvmlProcesses n;
  n.available = true;
  n.processes = {{7, "self", 800, true}, {9, "other", 2000, false}};
  const model::DeviceAccounting a = model::account_device(b, 0, 10000, 6000, n);
  EXPECT_EQ(a.recorded_live_bytes, 500u);
  ASSERT_EQ(a.recorded_by_library.size(), 2u);
  EXPECT_EQ(a.recorded_by_library[0], (std::pair<std::string, uint64_t>{"libnccl.so.2", 400}));
  EXPECT_EQ(a.recorded_by_library[1].first, "(no stack)");
  EXPECT_EQ(a.process_unrecorded_bytes, 300);
  ASSERT_TRUE(a.other_processes);
  EXPECT_EQ(a.other_processes->size(), 1u);
  ASSERT_TRUE(a.unaccounted_bytes);
  EXPECT_EQ(*a.unaccounted_bytes, 10000 - 6000 - 500 - 300 - 2000);
  EXPECT_TRUE(a.note.empty());
  EXPECT_EQ(model::accounting_lines(a).front(), "Where device 0's 9.77 KiB went:");
}

// NVML read after the program freed 450 of its bytes (or while it kept
// allocating): its figure for this process is taken back to the failure,
// or left out; never compared with a live table of another moment.
TEST(CardAccounting, NvmlReadAfterFreesIsTakenBackToTheFailure) {
  model::Bundle b = accounting_bundle();
  model::NvmlProcesses n;
  n.available = true;
  n.processes = {{7, "self", 350, true}, {9, "other", 2000, false}};  // 800 at the failure
  n.self_change_bytes = -450;
  model::DeviceAccounting a = model::account_device(b, 0, 10000, 6000, n);
  EXPECT_EQ(a.process_unrecorded_bytes, 300);
  ASSERT_TRUE(a.unaccounted_bytes);
  EXPECT_EQ(*a.unaccounted_bytes, 10000 - 6000 - 500 - 300 - 2000);
  EXPECT_NE(a.note.find("after this process had freed 450 B since the failure"), std::string::npos) << a.note;
  n.self_moving = true;
  a = model::account_device(b, 0, 10000, 6000, n);
  EXPECT_FALSE(a.process_unrecorded_bytes);
  EXPECT_FALSE(a.unaccounted_bytes);
  EXPECT_NE(a.note.find("allocated or freed while NVML was read"), std::string::npos) << a.note;
}

TEST(CardAccounting, WithoutNvmlTheFiguresAreNullAndSaySo) {
  model::Bundle b = accounting_bundle();
  model::NvmlProcesses n;
  n.note = "NVML (libnvidia-ml.so.1) is not available";
  const model::DeviceAccounting a = model::account_device(b, 0, 10000, 6000, n);
  EXPECT_FALSE(a.process_unrecorded_bytes);
  EXPECT_FALSE(a.other_processes);
  EXPECT_FALSE(a.unaccounted_bytes);
  EXPECT_EQ(a.note, "NVML (libnvidia-ml.so.1) is not available");
}

TEST(CardAccounting, SelfMissingFromNvmlOrUnknownUsageGivesNoNumber) {
  model::Bundle b = accounting_bundle();
  model::NvmlProcesses n;
  n.available = true;
  n.processes = {{12345, "python", 800, false}};  // a container: NVML's host pid is not ours
  model::DeviceAccounting a = model::account_device(b, 0, 10000, 6000, n);
  EXPECT_FALSE(a.process_unrecorded_bytes);
  EXPECT_FALSE(a.unaccounted_bytes);
  EXPECT_NE(a.note.find("host pids"), std::string::npos);
  n.processes = {{7, "self", 800, true}, {9, "other", std::nullopt, false}};
  a = model::account_device(b, 0, 10000, std::nullopt, n);
  EXPECT_EQ(a.process_unrecorded_bytes, 300);
  EXPECT_FALSE(a.unaccounted_bytes);
  EXPECT_NE(a.note.find("every process"), std::string::npos);
  EXPECT_NE(a.note.find("free memory is unknown"), std::string::npos);
}

}  // namespace
