// The cache of symbol look-ups: a failed look-up
// is not redone on every call, but is redone once something new is loaded;
// a found address is dropped once the object it lies in is unloaded.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "shim/base/symbol_cache.h"

using namespace gpumemrec;

namespace {

struct Counting {
  void* answer = nullptr;
  int calls = 0;
};
void* counting_lookup(const void* ctx) {
  auto* c = const_cast<Counting*>(static_cast<const Counting*>(ctx));
  ++c->calls;
  return c->answer;
}

// A library this test binary does not link, to make the loader add one.
const char* const kFreshLibs[] = {"libgpumemrec_test_missing.so", "libz.so.1", "libm.so.6"};

}  // namespace

TEST(SymbolCache, NegativeAnswerIsLookedUpOnce) {
  SymbolSlot slot;
  Counting c;
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(cached_symbol(slot, counting_lookup, &c), nullptr);
  EXPECT_EQ(c.calls, 1);
}

TEST(SymbolCache, NegativeAnswerIsRetriedAfterALoad) {
  SymbolSlot slot;
  Counting c;
  EXPECT_EQ(cached_symbol(slot, counting_lookup, &c), nullptr);
  const uint64_t adds = loader_adds();
  void* h = nullptr;
  for (const char* lib : kFreshLibs)
    if (!h) h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (loader_adds() == adds) GTEST_SKIP() << "no library could be newly loaded";
  int x = 0;
  c.answer = &x;  // "now the library that defines it is there"
  EXPECT_EQ(cached_symbol(slot, counting_lookup, &c), &x);
  EXPECT_EQ(c.calls, 2);
  EXPECT_EQ(cached_symbol(slot, counting_lookup, &c), &x);
  EXPECT_EQ(c.calls, 2);  // positive answers are cached too
}

TEST(SymbolCache, PositiveAnswerSurvivesUnrelatedUnloads) {
  SymbolSlot slot;
  Counting c;
  c.answer = reinterpret_cast<void*>(&dlopen);  // in libc: never unloaded
  EXPECT_EQ(cached_symbol(slot, counting_lookup, &c), c.answer);
  note_library_unloaded();
  EXPECT_EQ(cached_symbol(slot, counting_lookup, &c), c.answer);
  EXPECT_EQ(c.calls, 1);  // checked (still loaded), not looked up again
}

TEST(SymbolCache, PositiveAnswerIsDroppedWhenItsObjectIsGone) {
  SymbolSlot slot;
  Counting c;
  static char not_in_any_object[16];  // in this binary, but pretend: below
  c.answer = reinterpret_cast<void*>(&dlopen);
  EXPECT_EQ(cached_symbol(slot, counting_lookup, &c), c.answer);
  // The object the answer came from is "unloaded": its base no longer matches.
  slot.base.store(1, std::memory_order_relaxed);
  note_library_unloaded();
  c.answer = not_in_any_object;
  EXPECT_EQ(cached_symbol(slot, counting_lookup, &c), static_cast<void*>(not_in_any_object));
  EXPECT_EQ(c.calls, 2);
}

TEST(SymbolCache, AdoptKeepsTheFirstValidAnswer) {
  SymbolSlot slot;
  int a = 0, b = 0;
  EXPECT_EQ(adopt_symbol(slot, &a), &a);
  EXPECT_EQ(adopt_symbol(slot, &b), &a);
  EXPECT_EQ(adopt_symbol(slot, nullptr), &a);
}
