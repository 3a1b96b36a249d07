// PyTorch's backward in a stack's native frames: which autograd node the
// allocation ran in, whether it ran on an autograd engine thread, and the
// words the report, summary.txt and report --json print beside the site of
// a stack on such a thread (docs/design.md, "Borrowed Python frames").
//
// The names are libtorch's own symbols (demangled): a node's work is its
// `apply` (torch/csrc/autograd/function.h, `Node::apply`); the nodes
// generated for ATen operators are `torch::autograd::generated::<Op>Backward<N>`
// (tools/autograd/gen_autograd_functions.py, FUNCTION_DECLARATION, and
// tools/autograd/templates/Functions.h, namespace torch::autograd::generated;
// pytorch/pytorch @ 397b329b20148a1c2886d4a858b56ae7ef334349), others are
// directly in torch::autograd (AccumulateGrad, CopySlices, PyNode, ...). A
// device thread of the engine runs `torch::autograd::Engine::thread_main`
// (torch/csrc/autograd/engine.h, "start device threads (CUDA, XLA, etc.)";
// pytorch/pytorch @ a898f49bb7ee1acc78de142109b870e437b3d5dc); the thread
// that called backward runs it too for the CPU work, with its own Python
// frames, so "engine thread" is said only of a stack without them.
#pragma once

#include <string>
#include <vector>

#include "common/bundle_model.h"

namespace gpumemrec::autograd {

// "MmBackward0" for the innermost native frame named
// "torch::autograd::generated::MmBackward0::apply(...)" (or
// "torch::autograd::<Node>::apply(...)"); "" when none.
std::string node_of(const std::vector<model::Frame>& frames);
// Whether a frame is libtorch's autograd engine thread loop.
bool on_engine_thread(const std::vector<model::Frame>& frames);
// Whether any native frame is PyTorch's (a libtorch*/libc10* module or a
// torch::autograd function): the condition for keeping borrowed frames.
bool runs_in_torch(const std::vector<model::Frame>& frames);

// Beside the site of a stack: "autograd MmBackward0, engine thread; Python
// frames of thread 4242, waiting in backward" (or, python_borrow
// "ambiguous", that several threads waited), or "" when there is nothing to
// say.
std::string site_note(const model::Stack& s);

}  // namespace gpumemrec::autograd
