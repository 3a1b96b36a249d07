// Turning return addresses into module, offset, function, file and line, at
// dump time only. elfutils' libdwfl is loaded with dlopen when the first dump
// is written (never on the hot path, never linked): it reads .symtab, so an
// executable built with -g but without -rdynamic still shows its function
// names, and DWARF line tables give file:line. Without libdw we fall back to
// dladdr (exported symbols only).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>

namespace gpumemrec {

struct NativeFrameInfo {
  std::string module;
  uint64_t offset = 0;
  std::string function;
  std::string file;
  int line = 0;
};

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  // Starts a session: re-reads the process's modules (libraries may have
  // been loaded or unloaded since the last dump) and forgets every address
  // described before.
  void begin();
  void end();
  // `ip` is a return address; the call instruction before it is described.
  const NativeFrameInfo& describe(uint64_t ip);
  // Only its module and offset (no symbol table or line table is read: the
  // status region names the frames of framework and runtime modules so,
  // status/status_names.h). A later describe() of the address names it.
  const NativeFrameInfo& module_of(uint64_t ip);
  const char* backend() const;

 private:
  struct Impl;
  Impl* impl_;
  struct Entry {
    NativeFrameInfo info;
    bool named = false;  // by describe(), not only module_of()
  };
  std::unordered_map<uint64_t, Entry> cache_;  // this session only
};

std::string demangle(const char* name);

}  // namespace gpumemrec
