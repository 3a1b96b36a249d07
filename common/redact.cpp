#include "common/redact.h"

#include <cctype>

namespace gpumemrec {

namespace {

bool contains_word(const std::string& up, const char* w) { return up.find(w) != std::string::npos; }

// "--api-key" / "-token" / "API_KEY": the name part of an option or assignment.
std::string_view option_name(std::string_view arg) {
  while (!arg.empty() && arg.front() == '-') arg.remove_prefix(1);
  return arg;
}

bool looks_like_option(std::string_view arg) { return arg.size() > 1 && arg[0] == '-'; }

}  // namespace

bool is_secret_name(std::string_view name) {
  static const char* const kWords[] = {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"};
  std::string up(name);
  for (auto& c : up) c = c == '-' ? '_' : char(std::toupper((unsigned char)c));
  for (const char* w : kWords)
    if (contains_word(up, w)) return true;
  return false;
}

std::string redact_url_passwords(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  size_t pos = 0;
  for (;;) {
    size_t scheme = v.find("://", pos);
    if (scheme == std::string_view::npos) break;
    const size_t auth = scheme + 3;
    size_t end = v.find_first_of("/?# \t", auth);
    if (end == std::string_view::npos) end = v.size();
    const size_t at = v.rfind('@', end == 0 ? 0 : end - 1);
    const size_t colon = v.find(':', auth);
    out.append(v.substr(pos, auth - pos));
    if (at != std::string_view::npos && at >= auth && at < end && colon < at) {
      out.append(v.substr(auth, colon + 1 - auth));
      out.append(kRedacted);
      out.append(v.substr(at, end - at));
    } else {
      out.append(v.substr(auth, end - auth));
    }
    pos = end;
  }
  out.append(v.substr(pos));
  return out;
}

std::string redact_env_value(std::string_view name, std::string_view value) {
  if (is_secret_name(name)) return kRedacted;
  return redact_url_passwords(value);
}

std::vector<std::string> redact_cmdline(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  bool hide_next = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (hide_next && !looks_like_option(a)) {
      out.push_back(kRedacted);
      hide_next = false;
      continue;
    }
    hide_next = false;
    const size_t eq = a.find('=');
    if (eq != std::string::npos && eq > 0 && i > 0 && is_secret_name(option_name(std::string_view(a).substr(0, eq)))) {
      out.push_back(a.substr(0, eq + 1) + kRedacted);
      continue;
    }
    if (i > 0 && eq == std::string::npos && looks_like_option(a) && is_secret_name(option_name(a))) hide_next = true;
    out.push_back(redact_url_passwords(a));
  }
  return out;
}

}  // namespace gpumemrec
