#include "common/autograd_node.h"

#include <string_view>

namespace gpumemrec::autograd {

namespace {

using model::Frame;
using model::FrameKind;

constexpr std::string_view kAutograd = "torch::autograd::";
constexpr std::string_view kGenerated = "generated::";
constexpr std::string_view kApply = "::apply";

bool is_ident(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
  return true;
}

// "torch::autograd::[generated::]<Node>::apply" followed by nothing or a
// parameter list: <Node>; "" otherwise.
std::string_view node_name(std::string_view fn) {
  if (fn.substr(0, kAutograd.size()) != kAutograd) return {};
  fn.remove_prefix(kAutograd.size());
  if (fn.substr(0, kGenerated.size()) == kGenerated) fn.remove_prefix(kGenerated.size());
  const size_t apply = fn.find(kApply);
  if (apply == std::string_view::npos) return {};
  const std::string_view rest = fn.substr(apply + kApply.size());
  if (!rest.empty() && rest[0] != '(') return {};
  const std::string_view node = fn.substr(0, apply);
  return is_ident(node) ? node : std::string_view();
}

std::string_view base_name(std::string_view p) {
  const size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

}  // namespace

std::string node_of(const std::vector<Frame>& frames) {
  for (const Frame& f : frames) {
    if (f.kind != FrameKind::kNative) continue;
    const std::string_view n = node_name(f.function);
    if (!n.empty()) return std::string(n);
  }
  return "";
}

bool on_engine_thread(const std::vector<Frame>& frames) {
  constexpr std::string_view kLoop = "torch::autograd::Engine::thread_main";
  for (const Frame& f : frames)
    if (f.kind == FrameKind::kNative && std::string_view(f.function).substr(0, kLoop.size()) == kLoop) return true;
  return false;
}

bool runs_in_torch(const std::vector<Frame>& frames) {
  for (const Frame& f : frames) {
    if (f.kind != FrameKind::kNative) continue;
    const std::string_view base = base_name(f.module);
    if (base.substr(0, 8) == "libtorch" || base.substr(0, 6) == "libc10") return true;
    if (std::string_view(f.function).substr(0, kAutograd.size()) == kAutograd) return true;
  }
  return false;
}

std::string site_note(const model::Stack& s) {
  std::string note;
  if (!s.autograd_node.empty()) note = "autograd " + s.autograd_node;
  if ((s.python != "captured" || s.python_borrow == "outer") && on_engine_thread(s.frames)) note += note.empty() ? "engine thread" : ", engine thread";
  if (s.has_lender()) {
    if (!note.empty()) note += "; ";
    note += std::string(s.python == "borrowed" ? "Python frames" : "callers") + " of thread " +
            (s.python_thread ? std::to_string(s.python_thread) : std::string("?")) + ", waiting in backward";
  } else if (s.python_borrow == "ambiguous") {
    if (!note.empty()) note += "; ";
    note += "several Python threads waited in backward: none named";
  }
  return note;
}

}  // namespace gpumemrec::autograd
