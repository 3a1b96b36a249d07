#include "common/frame_order.h"

namespace gpumemrec {

bool is_python_eval_loop(std::string_view function) {
  constexpr std::string_view kLoop = "_PyEval_EvalFrameDefault";
  if (function.substr(0, kLoop.size()) != kLoop) return false;
  return function.size() == kLoop.size() || function[kLoop.size()] == '.';  // .cold, .constprop.0
}

bool is_python_interpreter_module(std::string_view module) {
  size_t slash = module.rfind('/');
  std::string_view base = slash == std::string_view::npos ? module : module.substr(slash + 1);
  if (base.substr(0, 3) == "lib") base.remove_prefix(3);
  // "python" followed by a version digit or nothing: python3.12, python3, python.
  constexpr std::string_view kName = "python";
  if (base.substr(0, kName.size()) != kName) return false;
  return base.size() == kName.size() || (base[kName.size()] >= '0' && base[kName.size()] <= '9');
}

std::vector<FrameSlot> interleave_python_frames(const std::vector<NativeFrameName>& native, size_t python_count) {
  const size_t n_native = native.size();
  std::vector<size_t> loops;  // native indices, innermost first
  for (size_t i = 0; i < n_native; ++i)
    if (is_python_eval_loop(native[i].function)) loops.push_back(i);

  // before[i] = how many Python frames go just before native frame i;
  // before[n_native] = after the outermost native frame.
  std::vector<uint32_t> before(n_native + 1, 0);
  if (python_count == 0) {
    // nothing to place
  } else if (!loops.empty() && loops.size() >= python_count) {
    for (size_t p = 0; p < python_count; ++p) before[loops[p]] = 1;
  } else if (!loops.empty()) {
    before[loops.back()] = uint32_t(python_count);
  } else {
    size_t at = n_native;
    for (size_t i = 0; i < n_native; ++i)
      if (is_python_interpreter_module(native[i].module)) {
        at = i;
        break;
      }
    before[at] = uint32_t(python_count);
  }

  std::vector<FrameSlot> out;
  out.reserve(n_native + python_count);
  uint32_t next_python = 0;
  for (size_t i = 0; i <= n_native; ++i) {
    for (uint32_t k = 0; k < before[i]; ++k) out.push_back({true, next_python++});
    if (i < n_native) out.push_back({false, uint32_t(i)});
  }
  return out;
}

std::vector<const model::Frame*> ordered_frames(const model::Stack& s) {
  std::vector<const model::Frame*> python, native;
  std::vector<NativeFrameName> names;
  for (const model::Frame& f : s.frames) {
    if (f.kind == model::FrameKind::kPython) {
      python.push_back(&f);
    } else {
      native.push_back(&f);
      names.push_back({f.function, f.module});
    }
  }
  std::vector<const model::Frame*> out;
  out.reserve(s.frames.size());
  for (const FrameSlot& slot : interleave_python_frames(names, python.size()))
    out.push_back(slot.python ? python[slot.index] : native[slot.index]);
  return out;
}

}  // namespace gpumemrec
