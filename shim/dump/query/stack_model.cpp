#include "shim/dump/query/stack_model.h"

#include <vector>

#include "common/autograd_node.h"
#include "common/frame_order.h"
#include "shim/record/python_stack.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

model::Frame python_frame(uint64_t word) {
  model::Frame f;
  f.kind = model::FrameKind::kPython;
  PythonFrameInfo pi;
  if (describe_python_frame(word, &pi)) {
    f.function = pi.function;
    f.file = pi.file;
    f.line = pi.line;
  }
  return f;
}

// Frames borrowed from a thread waiting in backward (record/python_borrow.h)
// are kept only for a stack that runs in PyTorch (common/autograd_node.h):
// another native thread allocating while a Python thread waits in backward
// (an NCCL or XLA thread) is not backward's work. `own` Python frames come
// first (a gradient hook the engine thread ran): the lent ones are their
// callers, python_borrow "outer"; dropped, the own ones stay.
void borrowed_frames(const uint64_t* words, uint32_t n, const std::vector<model::Frame>& native, size_t own,
                     std::vector<model::Frame>* python, model::Stack* s) {
  uint32_t tid = 0;
  if (python_borrow_ambiguous(words, n)) s->python_borrow = "ambiguous";
  if (!python_lender(words, n, &tid)) return;
  if (!autograd::runs_in_torch(native)) {
    python->resize(own);
    if (own == 0) s->python = "native_thread";
    s->python_borrow = "not_torch";
    return;
  }
  s->python_thread = tid;
  if (own > 0) s->python_borrow = "outer";
}

// Python frames of the calling thread's own: the frame words before a
// borrowed marker (all of them when none).
size_t own_python_frames(const uint64_t* words, uint32_t n) {
  size_t own = 0;
  for (uint32_t i = 0; i < n && !is_python_borrowed(words[i]); ++i)
    if (is_python_word(words[i]) && !is_python_marker(words[i])) ++own;
  return own;
}

}  // namespace

model::Frame native_frame(const NativeFrameInfo& ni) {
  model::Frame f;
  f.kind = model::FrameKind::kNative;
  f.module = ni.module;
  f.offset = ni.offset;
  f.function = ni.function;
  f.file = ni.file;
  f.line = ni.line;
  return f;
}

model::Stack stack_model(Recorder* r, uint32_t id, const NativeDescriber& native_of) {
  model::Stack s;
  s.stack_id = id;
  s.python = "disabled";
  const uint64_t* words = nullptr;
  uint32_t n = 0;
  if (!r->stacks.get(id, &words, &n)) return s;
  s.python = python_status(words, n);
  std::vector<model::Frame> python, native;
  for (uint32_t i = 0; i < n; ++i)
    if (is_python_word(words[i]) && !is_python_marker(words[i])) python.push_back(python_frame(words[i]));
  for (uint32_t i = 0; i < n; ++i)
    if (!is_python_word(words[i])) native.push_back(native_of(words[i]));
  borrowed_frames(words, n, native, own_python_frames(words, n), &python, &s);
  s.autograd_node = autograd::node_of(native);
  // Python frames where the interpreter's evaluation loop runs, native
  // frames innermost (common/frame_order.h): every consumer of stacks.json,
  // summary.txt and snapshot.pickle sees one caller order. Lent frames
  // after own ones (python_borrow "outer") go with them: the rule depends
  // only on the order within each kind, so the tools reorder alike.
  std::vector<NativeFrameName> names;
  names.reserve(native.size());
  for (const model::Frame& f : native) names.push_back({f.function, f.module});
  for (const FrameSlot& slot : interleave_python_frames(names, python.size()))
    s.frames.push_back(std::move(slot.python ? python[slot.index] : native[slot.index]));
  return s;
}

}  // namespace gpumemrec
