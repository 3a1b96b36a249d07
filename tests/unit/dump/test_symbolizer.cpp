// The symbolizer (shim/dump/query/symbolizer.cpp): a return address in this
// test program and one in a shared library, described as module, offset,
// function, file and line; the session cache; C++ names demangled.
#include "shim/dump/query/symbolizer.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

using namespace gpumemrec;

namespace {

// Returns its own return address: an address inside its caller, just after
// the call instruction (what the stack walker records).
__attribute__((noinline)) uint64_t return_address() {
  const uint64_t ip = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  asm volatile("" ::: "memory");
  return ip;
}

int g_call_line = 0;

__attribute__((noinline)) uint64_t caller_in_this_program() {
  const uint64_t ip = return_address(); g_call_line = __LINE__;
  asm volatile("" ::: "memory");
  return ip;
}

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : "";
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST(Symbolizer, AddressInThisProgram) {
  const uint64_t ip = caller_in_this_program();
  Symbolizer sym;
  sym.begin();
  const NativeFrameInfo info = sym.describe(ip);
  const std::string backend = sym.backend();
  sym.end();
  EXPECT_EQ(info.module, self_exe());  // the real path, even when dladdr says ""
  Dl_info dl{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(ip), &dl), 0);
  EXPECT_EQ(info.offset, ip - 1 - reinterpret_cast<uint64_t>(dl.dli_fbase));
  if (backend == "libdw") {
    // .symtab and DWARF: a hidden function of an executable, with its line.
    EXPECT_NE(info.function.find("caller_in_this_program"), std::string::npos) << info.function;
    EXPECT_TRUE(ends_with(info.file, "test_symbolizer.cpp")) << info.file;
    EXPECT_EQ(info.line, g_call_line);
  } else {
    GTEST_SKIP() << "libdw.so.1 not found: dladdr cannot name a function of an executable";
  }
}

TEST(Symbolizer, AddressInASharedLibrary) {
  void* h = dlopen(GPUMEMREC_UNIT_STUB_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto call_back = reinterpret_cast<uint64_t (*)(uint64_t (*)())>(dlsym(h, "stub_call_back"));
  auto call_line = reinterpret_cast<int (*)()>(dlsym(h, "stub_call_line"));
  ASSERT_NE(call_back, nullptr);
  const uint64_t ip = call_back(&return_address);
  Symbolizer sym;
  sym.begin();
  const NativeFrameInfo info = sym.describe(ip);
  sym.end();
  char real[PATH_MAX];
  ASSERT_NE(realpath(GPUMEMREC_UNIT_STUB_LIB, real), nullptr);
  char described[PATH_MAX];
  ASSERT_NE(realpath(info.module.c_str(), described), nullptr) << info.module;
  EXPECT_STREQ(described, real);
  EXPECT_EQ(info.function, "stub_call_back");  // exported: named by either backend
  Dl_info dl{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(ip), &dl), 0);
  EXPECT_EQ(info.offset, ip - 1 - reinterpret_cast<uint64_t>(dl.dli_fbase));
  if (std::string(sym.backend()) == "libdw") {
    EXPECT_TRUE(ends_with(info.file, "stub_driver.cpp")) << info.file;
    EXPECT_EQ(info.line, call_line());
  }
}

TEST(Symbolizer, LibcFunctionAndUnknownAddress) {
  Symbolizer sym;
  sym.begin();
  // An address just inside libc's getpid (as if it were a return address).
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  void* getpid_fn = dlsym(libc, "getpid");
  const NativeFrameInfo& in_libc = sym.describe(reinterpret_cast<uint64_t>(getpid_fn) + 1);
  EXPECT_NE(in_libc.module.find("libc.so"), std::string::npos) << in_libc.module;
  EXPECT_NE(in_libc.function.find("getpid"), std::string::npos) << in_libc.function;
  // Nothing is mapped at address 16: no module, no function, no crash.
  const NativeFrameInfo& nowhere = sym.describe(16);
  EXPECT_TRUE(nowhere.function.empty());
  EXPECT_EQ(nowhere.line, 0);
  sym.end();
  dlclose(libc);
}

TEST(Symbolizer, SessionCacheAnswersTheSameAddressOnce) {
  const uint64_t ip = caller_in_this_program();
  Symbolizer sym;
  sym.begin();
  const NativeFrameInfo* first = &sym.describe(ip);
  const NativeFrameInfo* again = &sym.describe(ip);
  EXPECT_EQ(first, again);  // cached for this session
  const std::string function = first->function;
  sym.end();
  sym.begin();  // a new dump: the modules are read again, the cache is new
  EXPECT_EQ(sym.describe(ip).function, function);
  sym.end();
}

TEST(Symbolizer, Demangle) {
  EXPECT_EQ(demangle("_ZN9gpumemrec10Symbolizer5beginEv"), "gpumemrec::Symbolizer::begin()");
  EXPECT_EQ(demangle("cuMemAlloc_v2"), "cuMemAlloc_v2");  // C names as they are
  EXPECT_EQ(demangle("_Znot a mangled name"), "_Znot a mangled name");
  EXPECT_EQ(demangle(""), "");
  EXPECT_EQ(demangle(nullptr), "");
}
