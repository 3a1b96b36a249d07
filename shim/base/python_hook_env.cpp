#include "shim/base/python_hook_env.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "shim/base/hook_table.h"
#include "shim/base/log.h"
#include "shim/base/self_module.h"

namespace gpumemrec {

namespace {

// The directory that holds our sitecustomize.py: "python" beside the
// library (the build tree's bin/python, the installed lib/gpumemrec/python).
std::string hook_dir() {
  const std::string lib_dir = self_module_dir();
  if (lib_dir.empty()) return "";
  std::string dir = lib_dir + "/python";
  struct stat st;
  if (stat((dir + "/sitecustomize.py").c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  return dir;
}

// CPython about to start: its main (Py_BytesMain) is in the process, not yet
// initialized, and the executable is named python* (python3, python3.12,
// python3.12d; a venv's python is a link to one of these). A program that
// embeds libpython is left alone: it may never start the interpreter, and
// then nobody would restore PYTHONPATH for its children.
bool process_is_cpython() {
  DlsymFn dls = real_dlsym();
  if (!dls || !dls(RTLD_DEFAULT, "Py_BytesMain")) return false;
  using IntFn = int (*)();
  auto initialized = reinterpret_cast<IntFn>(dls(RTLD_DEFAULT, "Py_IsInitialized"));
  if (!initialized || initialized()) return false;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  const char* base = std::strrchr(exe, '/');
  return std::strncmp(base ? base + 1 : exe, "python", 6) == 0;
}

// This process's argv from /proc/self/cmdline (NUL-separated).
std::vector<std::string> read_cmdline() {
  std::vector<std::string> args;
  const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return args;
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) all.append(buf, size_t(n));
  close(fd);
  for (size_t pos = 0; pos < all.size();) {
    const size_t end = all.find('\0', pos);
    args.push_back(all.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return args;
}

// Puts PYTHONPATH back as kSavedVar says, and removes kSavedVar.
void restore_saved() {
  const char* saved = std::getenv(kSavedVar);
  if (!saved) return;
  const std::string s = saved;
  if (s.size() >= 2 && s[0] == '1' && s[1] == ':') setenv("PYTHONPATH", s.c_str() + 2, 1);
  else unsetenv("PYTHONPATH");
  unsetenv(kSavedVar);
}

}  // namespace

// The options as CPython's own parser reads them (Python/getopt.c,
// _PyOS_GetOpt, SHORT_OPTS "bBc:dEhiIJm:OqRsStuvVW:xX:?" and the long
// option check-hash-based-pycs with an argument): grouped letters ("-IS"),
// -c/-m end the options, -W/-X take the rest of the word or the next one.
bool python_options_allow_hook(const char* const* argv, int argc) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (a[0] != '-' || a[1] == '\0') return true;  // the script, or "-" (stdin)
    if (a[1] == '-') {
      if (a[2] == '\0') return true;  // "--": the script follows
      if (std::strcmp(a, "--check-hash-based-pycs") == 0) ++i;
      continue;
    }
    for (const char* p = a + 1; *p; ++p) {
      if (*p == 'I' || *p == 'E' || *p == 'S') return false;
      if (*p == 'c' || *p == 'm') return true;
      if (*p == 'W' || *p == 'X') {
        if (p[1] == '\0') ++i;
        break;
      }
    }
  }
  return true;
}

void python_hook_inject(bool enabled) {
  restore_saved();
  if (!enabled || !process_is_cpython()) return;
  const std::vector<std::string> args = read_cmdline();
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  if (argv.empty() || !python_options_allow_hook(argv.data(), int(argv.size()))) {
    GM_DEBUG("python started with -I, -E or -S: no start-up hook");
    return;
  }
  const std::string dir = hook_dir();
  if (dir.empty()) {
    GM_DEBUG("no python/sitecustomize.py beside the library: no start-up hook");
    return;
  }
  const char* old = std::getenv("PYTHONPATH");
  const std::string saved = old ? std::string("1:") + old : std::string("0:");
  const std::string path = old && *old ? dir + ":" + old : dir;
  if (setenv(kSavedVar, saved.c_str(), 1) != 0) return;
  if (setenv("PYTHONPATH", path.c_str(), 1) != 0) unsetenv(kSavedVar);
}

}  // namespace gpumemrec
