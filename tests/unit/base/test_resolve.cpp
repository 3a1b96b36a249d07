// Finding the real functions (shim/base/resolve.cpp, self_module.cpp): a
// GPU library loaded RTLD_LOCAL (as Python and the static runtime load
// libcuda) is found by its usual name; nothing is found before it is
// loaded, and nothing is loaded by looking; our own functions (this program
// links the shim's objects) are never taken for real ones.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "shim/base/hook_table.h"
#include "shim/base/self_module.h"
#include "shim/base/symbol_cache.h"

using namespace gpumemrec;

namespace {
void a_function_of_this_program() {}
}  // namespace

TEST(Resolve, LibraryLoadedLocallyIsFoundByItsName) {
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) GTEST_SKIP() << "a CUDA driver is loaded already";
  EXPECT_EQ(real_function(HookId::cuMemAlloc_v2), nullptr);  // not loaded: not found, and not loaded by us
  EXPECT_EQ(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD), nullptr);
  setenv("FAKEGPU_DEVICES", "1", 1);
  void* h = dlopen(GPUMEMREC_UNIT_FAKES_DIR "/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  void* own = real_dlsym()(h, "cuMemAlloc_v2");
  ASSERT_NE(own, nullptr);
  // The negative answer was remembered with the loader's count: redone now.
  EXPECT_EQ(real_function(HookId::cuMemAlloc_v2), own);
  EXPECT_EQ(real_function(HookId::cuMemFree_v2), real_dlsym()(h, "cuMemFree_v2"));
  EXPECT_EQ(lookup_library_symbol(Library::CUDA, "cuDriverGetVersion"), real_dlsym()(h, "cuDriverGetVersion"));
  EXPECT_EQ(lookup_library_symbol(Library::CUDA, "cuNoSuchFunction"), nullptr);
  EXPECT_EQ(lookup_library_symbol(Library::HIP, "hipMalloc"), nullptr);  // another library's name
  SymbolSlot slot;
  void* v1 = helper_function(slot, Library::CUDA, "cuDriverGetVersion");
  EXPECT_EQ(v1, real_dlsym()(h, "cuDriverGetVersion"));
  EXPECT_EQ(helper_function(slot, Library::CUDA, "cuDriverGetVersion"), v1);
}

TEST(Resolve, OurOwnFunctionsAreNeverTheRealOnes) {
  self_module_init();
  EXPECT_TRUE(address_in_self(reinterpret_cast<uint64_t>(&a_function_of_this_program)));
  EXPECT_TRUE(address_in_self(reinterpret_cast<uint64_t>(&real_function)));
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  EXPECT_FALSE(address_in_self(reinterpret_cast<uint64_t>(real_dlsym()(libc, "getpid"))));
  EXPECT_FALSE(address_in_self(0));
  EXPECT_EQ(adopt_real_function(HookId::hipFree, reinterpret_cast<void*>(&a_function_of_this_program)), nullptr);
  EXPECT_EQ(real_function(HookId::hipFree), nullptr);
  dlclose(libc);
}

TEST(Resolve, TheLoadersOwnFunctionsAreGlibcs) {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  ASSERT_NE(real_dlsym(), nullptr);
  EXPECT_FALSE(address_in_self(reinterpret_cast<uint64_t>(real_dlsym())));  // not our exported dlsym
  EXPECT_FALSE(address_in_self(reinterpret_cast<uint64_t>(real_dlclose())));
  // glibc's, or under a sanitizer the runtime's interceptor: it comes next
  // in the look-up order (preloaded or linked first) and calls glibc's.
  void* const next = reinterpret_cast<void*>(real_dlclose());
  Dl_info info{};
  ASSERT_NE(dladdr(next, &info), 0);
  const std::string module = info.dli_fname ? info.dli_fname : "";
  const bool sanitizer = module.find("libtsan") != std::string::npos || module.find("libasan") != std::string::npos;
  if (!sanitizer) {
    EXPECT_EQ(next, real_dlsym()(libc, "dlclose")) << module;
  }
  dlclose(libc);
}

TEST(Resolve, HookNamesAndBackends) {
  HookId id;
  ASSERT_TRUE(find_hook("hipMallocManaged", &id));
  EXPECT_STREQ(hook_name(id), "hipMallocManaged");
  EXPECT_EQ(hook_backend(id), Backend::kHip);
  ASSERT_TRUE(find_hook("cudaMallocAsync_ptsz", &id));
  EXPECT_EQ(hook_backend(id), Backend::kCuda);
  EXPECT_EQ(hook_info(id).library, Library::CUDART);
  EXPECT_FALSE(find_hook("cudaMallocAsync_ptsz_x", &id));
  EXPECT_FALSE(find_hook("", &id));
  EXPECT_STREQ(hook_name(uint8_t(kHookCount)), "?");
}
