// Our exported dlclose (shim/hooks/dlclose_hook.cpp): glibc's answer, and a
// new unload generation exactly when the loader really unloaded an object
// (every cached real-function address is then checked again).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "shim/base/symbol_cache.h"

using namespace gpumemrec;

TEST(DlcloseHook, UnloadBumpsTheGenerationOnce) {
  void* h = dlopen(GPUMEMREC_UNIT_UNLOAD_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  void* again = dlopen(GPUMEMREC_UNIT_UNLOAD_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_EQ(again, h);
  const uint64_t before = unload_generation();
  EXPECT_EQ(dlclose(again), 0);  // still referenced: nothing unloaded
  EXPECT_EQ(unload_generation(), before);
  EXPECT_EQ(dlclose(h), 0);
  EXPECT_GT(unload_generation(), before);
  EXPECT_EQ(dlopen(GPUMEMREC_UNIT_UNLOAD_LIB, RTLD_NOW | RTLD_NOLOAD), nullptr);  // really gone
}
