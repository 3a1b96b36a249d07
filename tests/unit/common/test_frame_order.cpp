// Where Python frames go among native frames (common/frame_order.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/frame_order.h"

using namespace gpumemrec;

namespace {

// Native frames as "function@module" ("" parts allowed); Python frames "p0".."pN".
std::string merged(const std::vector<std::pair<std::string, std::string>>& native, size_t python) {
  std::vector<NativeFrameName> names;
  for (auto& f : native) names.push_back({f.first, f.second});
  std::string out;
  size_t seen_native = 0, seen_python = 0;
  for (const FrameSlot& s : interleave_python_frames(names, python)) {
    if (!out.empty()) out += " ";
    if (s.python) {
      EXPECT_EQ(s.index, seen_python++) << "python frames out of order";
      out += "p" + std::to_string(s.index);
    } else {
      EXPECT_EQ(s.index, seen_native++) << "native frames out of order";
      out += native[s.index].first.empty() ? "?" : native[s.index].first;
    }
  }
  EXPECT_EQ(seen_native, native.size());
  EXPECT_EQ(seen_python, python);
  return out;
}

const char* kPy = "/usr/bin/python3.12";
const char* kLibPy = "/opt/py/lib/libpython3.10.so.1.0";

}  // namespace

TEST(FrameOrder, EvalLoopNames) {
  EXPECT_TRUE(is_python_eval_loop("_PyEval_EvalFrameDefault"));
  EXPECT_TRUE(is_python_eval_loop("_PyEval_EvalFrameDefault.cold"));
  // Entry points that call the loop: counting them would count one loop twice.
  EXPECT_FALSE(is_python_eval_loop("PyEval_EvalFrameEx"));
  EXPECT_FALSE(is_python_eval_loop("_PyEval_EvalFrame"));
  EXPECT_FALSE(is_python_eval_loop("PyEval_EvalCode"));
  EXPECT_FALSE(is_python_eval_loop("_PyEval_EvalFrameDefaultX"));
  EXPECT_FALSE(is_python_eval_loop(""));
}

TEST(FrameOrder, InterpreterModules) {
  EXPECT_TRUE(is_python_interpreter_module("/usr/bin/python3.12"));
  EXPECT_TRUE(is_python_interpreter_module("/root/.pyenv/versions/3.10.14/bin/python3.10"));
  EXPECT_TRUE(is_python_interpreter_module("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"));
  EXPECT_TRUE(is_python_interpreter_module("python3"));
  EXPECT_FALSE(is_python_interpreter_module("/usr/lib/python3/dist-packages/torch/_C.cpython-311-x86_64-linux-gnu.so"));
  EXPECT_FALSE(is_python_interpreter_module("/usr/bin/pythonista"));
  EXPECT_FALSE(is_python_interpreter_module("/home/u/mypython3/app"));
  EXPECT_FALSE(is_python_interpreter_module(""));
}

// CPython 3.10: one loop per Python call; each Python frame goes on the
// innermost side of its loop, so the loop calls it and it calls the C below.
TEST(FrameOrder, OneFramePerLoop) {
  EXPECT_EQ(merged({{"cudaMalloc", "libcudart.so"},
                    {"ffi_call", "libffi.so"},
                    {"_PyEval_EvalFrameDefault", kLibPy},
                    {"_PyFunction_Vectorcall", kLibPy},
                    {"_PyEval_EvalFrameDefault", kLibPy},
                    {"PyEval_EvalCode", kLibPy},
                    {"main", "/usr/bin/python3.10"}},
                   2),
            "cudaMalloc ffi_call p0 _PyEval_EvalFrameDefault _PyFunction_Vectorcall p1 _PyEval_EvalFrameDefault "
            "PyEval_EvalCode main");
}

// More loops than Python frames (the Python frames were cut at their limit,
// which keeps the innermost): the innermost loops get them.
TEST(FrameOrder, MoreLoopsThanPythonFrames) {
  EXPECT_EQ(merged({{"c", ""}, {"_PyEval_EvalFrameDefault", kPy}, {"_PyEval_EvalFrameDefault", kPy}, {"main", kPy}}, 1),
            "c p0 _PyEval_EvalFrameDefault _PyEval_EvalFrameDefault main");
}

// CPython 3.11+: one loop runs several Python frames; which belong to which
// loop cannot be told, so all go at the outermost loop.
TEST(FrameOrder, FewerLoopsThanPythonFramesGoToOutermostLoop) {
  EXPECT_EQ(merged({{"cudaMalloc", ""},
                    {"_PyEval_EvalFrameDefault", kPy},
                    {"PyObject_Call", kPy},
                    {"_PyEval_EvalFrameDefault", kPy},
                    {"Py_RunMain", kPy},
                    {"_start", kPy}},
                   3),
            "cudaMalloc _PyEval_EvalFrameDefault PyObject_Call p0 p1 p2 _PyEval_EvalFrameDefault Py_RunMain _start");
  EXPECT_EQ(merged({{"cudaMalloc", ""}, {"_PyEval_EvalFrameDefault.cold", kPy}, {"main", kPy}}, 4),
            "cudaMalloc p0 p1 p2 p3 _PyEval_EvalFrameDefault.cold main");
}

// Stripped interpreter: no symbol names, but the module says where the
// interpreter starts; the Python frames go at its innermost frame.
TEST(FrameOrder, StrippedInterpreterUsesModule) {
  EXPECT_EQ(merged({{"cudaMalloc", "/usr/lib/libcudart.so.12"},
                    {"", "/usr/lib/python3.12/lib-dynload/_ctypes.cpython-312.so"},
                    {"", kPy},
                    {"", kPy},
                    {"__libc_start_main", "/lib/libc.so.6"}},
                   2),
            "cudaMalloc ? p0 p1 ? ? __libc_start_main");
}

// No loop and no interpreter module (an embedded, static interpreter, or a
// native stack cut before reaching the interpreter): after the outermost
// native frame.
TEST(FrameOrder, NoInterpreterFrameGoesOutermost) {
  EXPECT_EQ(merged({{"cudaMalloc", "libcudart.so"}, {"at::empty", "/x/libtorch_cpu.so"}}, 2),
            "cudaMalloc at::empty p0 p1");
  EXPECT_EQ(merged({}, 2), "p0 p1");
}

TEST(FrameOrder, NoPythonFramesKeepsNativeOrder) {
  EXPECT_EQ(merged({{"a", kPy}, {"_PyEval_EvalFrameDefault", kPy}, {"b", ""}}, 0), "a _PyEval_EvalFrameDefault b");
  EXPECT_EQ(merged({}, 0), "");
}
