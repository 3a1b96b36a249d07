// PyTorch's backward in a stack (common/autograd_node.h): the autograd node
// from libtorch's symbol names, the engine thread, the gate for borrowed
// frames, the words beside the site, and the site of a borrowed stack.
#include "common/autograd_node.h"

#include <gtest/gtest.h>

#include "common/site_rules.h"

using namespace gpumemrec;
using model::Frame;
using model::FrameKind;

namespace {

// A native frame names its module, a Python frame its file.
Frame frame(FrameKind kind, const char* where, const char* function, int line) {
  Frame f;
  f.kind = kind;
  (kind == FrameKind::kNative ? f.module : f.file) = where;
  f.function = function;
  f.line = line;
  return f;
}
Frame native(const char* module, const char* function) { return frame(FrameKind::kNative, module, function, 0); }
Frame python(const char* file, const char* function, int line) { return frame(FrameKind::kPython, file, function, line); }

constexpr const char* kTorch = "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so";
constexpr const char* kC10 = "/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so";

// A caching-allocator cudaMalloc on an engine thread, as libtorch names it.
model::Stack backward_stack() {
  model::Stack s;
  s.frames = {native("/usr/lib/libcudart.so.12", "cudaMalloc"),
              native(kC10, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"),
              native(kTorch, "at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"),
              native(kTorch, "torch::autograd::generated::details::mm_mat2_backward(at::Tensor const&, at::Tensor const&, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::Layout, c10::Scalar const&)"),
              native(kTorch, "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"),
              native(kTorch, "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)"),
              native(kTorch, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
              native("/lib/x86_64-linux-gnu/libc.so.6", "start_thread")};
  return s;
}

}  // namespace

TEST(AutogradNode, NamesTheInnermostNode) {
  EXPECT_EQ(autograd::node_of(backward_stack().frames), "MmBackward0");
  std::vector<Frame> f = {native(kTorch, "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"),
                          native(kTorch, "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)")};
  EXPECT_EQ(autograd::node_of(f), "AccumulateGrad");
  // A symbolizer without parameter lists.
  EXPECT_EQ(autograd::node_of({native(kTorch, "torch::autograd::generated::AddmmBackward0::apply")}), "AddmmBackward0");
}

TEST(AutogradNode, OtherFunctionsNameNoNode) {
  for (const char* fn : {"torch::autograd::generated::details::mm_mat2_backward(at::Tensor const&)",
                         "torch::autograd::Node::apply_with_saved(std::vector<at::Tensor> const&, torch::dynamo::autograd::SwapSavedVariables&)",
                         "torch::autograd::CppNode<MyFunction>::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
                         "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
                         "my::autograd::generated::MmBackward0::apply(int)", "", "apply"}) {
    EXPECT_EQ(autograd::node_of({native(kTorch, fn)}), "") << fn;
  }
  // A Python frame is never a node.
  EXPECT_EQ(autograd::node_of({python("torch::autograd::generated::MmBackward0::apply", "x", 1)}), "");
}

TEST(AutogradNode, EngineThreadAndTorchGate) {
  EXPECT_TRUE(autograd::on_engine_thread(backward_stack().frames));
  EXPECT_FALSE(autograd::on_engine_thread({native(kTorch, "at::_ops::mm::call(at::Tensor const&)")}));
  EXPECT_TRUE(autograd::runs_in_torch(backward_stack().frames));
  EXPECT_TRUE(autograd::runs_in_torch({native(kC10, "")}));
  // Named like libtorch's function, in a module of any name (a static build).
  EXPECT_TRUE(autograd::runs_in_torch({native("/opt/app/bin/trainer", "torch::autograd::Engine::thread_main()")}));
  EXPECT_FALSE(autograd::runs_in_torch({native("/usr/lib/libnccl.so.2", "ncclProxyService"),
                                        native("/lib/x86_64-linux-gnu/libc.so.6", "start_thread")}));
  EXPECT_FALSE(autograd::runs_in_torch({python("/venv/lib/python3.12/site-packages/torch/autograd/graph.py",
                                               "_engine_run_backward", 829)}));
}

TEST(AutogradNode, SiteNoteWords) {
  model::Stack s = backward_stack();
  s.autograd_node = "MmBackward0";
  EXPECT_EQ(autograd::site_note(s), "autograd MmBackward0, engine thread");
  s.python = "borrowed";
  s.python_thread = 4242;
  EXPECT_EQ(autograd::site_note(s), "autograd MmBackward0, engine thread; Python frames of thread 4242, waiting in backward");
  s.python_thread = 0;  // CPython 3.10 keeps no kernel thread id
  EXPECT_EQ(autograd::site_note(s), "autograd MmBackward0, engine thread; Python frames of thread ?, waiting in backward");
  s.python = "native_thread";
  s.python_borrow = "ambiguous";
  EXPECT_EQ(autograd::site_note(s), "autograd MmBackward0, engine thread; several Python threads waited in backward: none named");
  // The thread that called backward runs thread_main for the CPU work: its
  // own Python frames are there, it is not an engine thread.
  s.python = "captured";
  s.python_borrow.clear();
  EXPECT_EQ(autograd::site_note(s), "autograd MmBackward0");
  // A hook the engine thread ran: its own frames, the waiting thread's after them.
  s.python_borrow = "outer";
  s.python_thread = 4242;
  EXPECT_EQ(autograd::site_note(s), "autograd MmBackward0, engine thread; callers of thread 4242, waiting in backward");
  s.python_borrow.clear();
  model::Stack plain;
  plain.frames = {native("/home/u/app", "main")};
  plain.python = "native_thread";
  EXPECT_EQ(autograd::site_note(plain), "");
}

// The borrowed frames follow the engine thread's native frames: the site is
// the user's line that called backward, past torch's own Python files.
TEST(AutogradNode, SiteOfABorrowedStackIsTheUsersLine) {
  model::Stack s = backward_stack();
  s.python = "borrowed";
  s.frames.push_back(python("/venv/lib/python3.12/site-packages/torch/autograd/graph.py", "_engine_run_backward", 829));
  s.frames.push_back(python("/venv/lib/python3.12/site-packages/torch/autograd/__init__.py", "backward", 347));
  s.frames.push_back(python("/venv/lib/python3.12/site-packages/torch/_tensor.py", "Tensor.backward", 581));
  s.frames.push_back(python("/home/u/train.py", "train_step", 42));
  s.frames.push_back(python("/home/u/train.py", "<module>", 90));
  site::attribute(&s, site::Rules());
  ASSERT_EQ(s.site_frame, 11);
  EXPECT_EQ(s.frames[11].function, "train_step");
  EXPECT_EQ(s.library, "libc10_cuda.so");
}
