// Our exported dlsym (shim/hooks/dlsym_hook.S, dlsym_hook.cpp): on an
// explicit handle a hooked name becomes our wrapper only when the library's
// function is (or becomes) the real one we call; every other answer,
// dlerror() included, is glibc's.
#include "shim/hooks/proc_address.h"

#include "shim/base/hook_table.h"
#include "shim/hooks/wrappers.h"
#include "tests/unit/hooks/stub.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace gpumemrec;

TEST(DlsymHook, HookedNameOnAHandleIsOurWrapperAndTheRealIsAdopted) {
  ASSERT_NE(stub::handle(), nullptr) << dlerror();
  ASSERT_NE(recorder(), nullptr);
  void* lib_own = real_dlsym()(stub::handle(), "cuMemAlloc_v2");
  ASSERT_NE(lib_own, nullptr);
  EXPECT_EQ(dlsym(stub::handle(), "cuMemAlloc_v2"), wrapper_of(HookId::cuMemAlloc_v2));
  EXPECT_EQ(real_function(HookId::cuMemAlloc_v2), lib_own);
  // Asked again: the same answer, the same real function.
  EXPECT_EQ(dlsym(stub::handle(), "cuMemAlloc_v2"), wrapper_of(HookId::cuMemAlloc_v2));
  EXPECT_EQ(real_function(HookId::cuMemAlloc_v2), lib_own);
}

TEST(DlsymHook, OtherNamesAndMissingNamesAreGlibcsAnswer) {
  ASSERT_NE(stub::handle(), nullptr) << dlerror();
  EXPECT_EQ(dlsym(stub::handle(), "stub_calls"), real_dlsym()(stub::handle(), "stub_calls"));
  dlerror();
  EXPECT_EQ(dlsym(stub::handle(), "no_such_function_anywhere"), nullptr);
  const char* err = dlerror();
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::strstr(err, "no_such_function_anywhere"), nullptr) << err;
  // A hooked name the library does not define: NULL and glibc's message, not
  // our export.
  EXPECT_EQ(dlsym(stub::handle(), "hipMallocManaged"), nullptr);
  EXPECT_NE(dlerror(), nullptr);
}

// RTLD_NEXT is resolved from the caller's return address: the tail jump in
// dlsym_hook.S keeps it the caller's (this program), so the next definition
// after the program is libc's.
TEST(DlsymHook, PseudoHandlesKeepTheCallersScope) {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  EXPECT_EQ(dlsym(RTLD_NEXT, "getpid"), real_dlsym()(libc, "getpid"));
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "getpid"), real_dlsym()(libc, "getpid"));
  // A hooked name that no library in the global scope defines (the stub is
  // RTLD_LOCAL and was never asked here): not found, with glibc's message,
  // though this program defines our wrapper of that name.
  dlerror();
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), nullptr);
  EXPECT_NE(dlerror(), nullptr);
  dlclose(libc);
}

TEST(DlsymHook, SwapRuleNeedsTheRealFunction) {
  ASSERT_NE(recorder(), nullptr);
  ASSERT_NE(stub::handle(), nullptr);
  void* lib_own = real_dlsym()(stub::handle(), "cuMemFree_v2");
  void* other = real_dlsym()(stub::handle(), "stub_calls");
  EXPECT_EQ(swap_dlsym_result(nullptr, lib_own), lib_own);
  EXPECT_EQ(swap_dlsym_result("cuMemFree_v2", nullptr), nullptr);
  EXPECT_EQ(swap_dlsym_result("stub_calls", other), other);  // not hooked
  EXPECT_EQ(swap_dlsym_result("cuMemFree_v2", lib_own), wrapper_of(HookId::cuMemFree_v2));
  // A second library's cuMemFree_v2 while the first is the real one: ours
  // would call the first, so the second's own address is handed back.
  EXPECT_EQ(swap_dlsym_result("cuMemFree_v2", other), other);
}
