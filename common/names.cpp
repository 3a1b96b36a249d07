#include "common/names.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::names {
namespace {

constexpr const char kAnon[] = "(anonymous namespace)";
constexpr size_t kAnonLen = sizeof kAnon - 1;
constexpr const char kEllipsis[] = "\xE2\x80\xA6";  // U+2026

bool ident_char(char c) { return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool operator_at(const std::string& s, size_t i) {
  return s.compare(i, 8, "operator") == 0 && (i == 0 || !ident_char(s[i - 1])) &&
         (i + 8 >= s.size() || !ident_char(s[i + 8]));
}

// Copies "operator" and its symbol ("()", "[]", "<<=", "->*", ...) to out.
size_t copy_operator(const std::string& s, size_t i, std::string* out) {
  *out += "operator";
  i += 8;
  if (s.compare(i, 2, "()") == 0 || s.compare(i, 2, "[]") == 0) {
    *out += s.substr(i, 2);
    return i + 2;
  }
  while (i < s.size() && strchr("<>=!+-*/%^&|~,", s[i])) *out += s[i++];
  return i;
}

// Index of the bracket closing the one at `open` ('<' or '('), counting both
// kinds together; npos when unbalanced.
size_t closing(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (operator_at(s, i)) {
      std::string skip;
      i = copy_operator(s, i, &skip) - 1;
      continue;
    }
    char c = s[i];
    if (c == '-' && i + 1 < s.size() && s[i + 1] == '>') {
      ++i;  // "->" in a trailing return type
      continue;
    }
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') {
      if (--depth == 0) return i;
      if (depth < 0) return std::string::npos;
    }
  }
  return std::string::npos;
}

std::string base_name(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

std::string short_function(const std::string& s) {
  if (!s.empty() && s[0] == '(' && s.compare(0, kAnonLen, kAnon) != 0) return s;  // a placeholder: "(no stack recorded)"
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, kAnonLen, kAnon) == 0) {
      out += kAnon;
      i += kAnonLen;
      continue;
    }
    if (operator_at(s, i)) {
      i = copy_operator(s, i, &out);
      continue;
    }
    char c = s[i];
    if (c == '<' || c == '(') {
      size_t close = closing(s, i);
      if (close == std::string::npos) return s;
      out += c;
      if (close > i + 1) out += kEllipsis;
      out += c == '<' ? '>' : ')';
      i = close + 1;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

std::string frame_label(const Frame& f, bool verbose) {
  if (verbose || f.function.empty()) return format_frame(f);
  std::string s = f.kind == FrameKind::kPython ? f.function : short_function(f.function);
  if (!f.file.empty()) {
    s += " (" + base_name(f.file);
    if (f.line > 0) s += ":" + std::to_string(f.line);
    s += ")";
  } else if (f.kind == FrameKind::kNative && !f.module.empty()) {
    s += " (" + base_name(f.module) + ")";
  }
  return s;
}

std::string frame_key(const Frame& f) {
  std::string k(1, f.kind == FrameKind::kPython ? 'p' : f.kind == FrameKind::kNative ? 'n' : 'o');
  if (!f.function.empty() || !f.file.empty()) {
    k += f.function;
    k += '\x1f';
    k += f.file;
    k += '\x1f';
    k += std::to_string(f.line);
    return k;
  }
  char buf[32];
  snprintf(buf, sizeof buf, "+0x%" PRIx64, f.offset);
  return k + base_name(f.module) + buf;
}

std::string python_status_text(const std::string& python) {
  if (python == "native_thread") return "no Python frames on this thread (native thread)";
  if (python == "no_gil") return "Python frames not readable (interpreter version or build not supported)";
  if (python == "disabled") return "Python frames not captured (GPUMEMREC_PYTHON_STACKS=0)";
  return "";
}

}  // namespace gpumemrec::names
