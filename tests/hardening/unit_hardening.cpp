// Unit tests for the hardening pieces that an end-to-end run cannot reach on
// every machine: the setuid/setgid decision (a real setuid run needs root and
// a system-wide preload), and the dump path's emergency memory.
#include <gtest/gtest.h>

#include <cstring>

#include "shim/base/dump_memory.h"
#include "shim/base/privilege.h"

using namespace gpumemrec;

TEST(Privilege, PlainProcessRecords) { EXPECT_FALSE(privileged_decision(1000, 1000, 1000, 1000, 0)); }
TEST(Privilege, RootRecords) { EXPECT_FALSE(privileged_decision(0, 0, 0, 0, 0)); }
TEST(Privilege, SetuidRefused) { EXPECT_TRUE(privileged_decision(1000, 0, 1000, 1000, 0)); }
TEST(Privilege, SetuidToUserRefused) { EXPECT_TRUE(privileged_decision(0, 65534, 0, 0, 0)); }
TEST(Privilege, SetgidRefused) { EXPECT_TRUE(privileged_decision(1000, 1000, 1000, 0, 0)); }
TEST(Privilege, SecureExecRefusedEvenAfterDroppingIds) {
  // A setuid program that made its ids equal again, or file capabilities.
  EXPECT_TRUE(privileged_decision(1000, 1000, 1000, 1000, 1));
}
TEST(Privilege, ThisTestIsNotPrivileged) { EXPECT_FALSE(process_is_privileged()); }

TEST(DumpMemory, OnlyInsideADump) {
  // (the recorder's constructor may already have reserved it: kDumpArenaBytes)
  ASSERT_TRUE(dump_memory_init(1 << 20));
  EXPECT_EQ(dump_memory_alloc(64), nullptr);
  {
    DumpMemoryScope scope;
    EXPECT_TRUE(dump_memory_active());
    void* p = dump_memory_alloc(100);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(dump_memory_owns(p));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
    std::memset(p, 0xab, 100);
    EXPECT_EQ(dump_memory_alloc(kDumpArenaBytes + 1), nullptr);  // more than the arena
  }
  EXPECT_FALSE(dump_memory_active());
  EXPECT_EQ(dump_memory_alloc(64), nullptr);
  int x = 0;
  EXPECT_FALSE(dump_memory_owns(&x));
}
