// The bundle schema (common/bundle_schema.h, common/bundle_keys.h): every
// enum value's name reads back as that value, unknown names read as kOther,
// the ring's 4-bit packing holds every value, and no key is listed twice.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "common/bundle_schema.h"
#include "common/event.h"

namespace gpumemrec {
namespace {

const EventKind kKinds[] = {EventKind::kAlloc, EventKind::kFree, EventKind::kOom, EventKind::kAllocFailed,
                            EventKind::kFreeFailed, EventKind::kMap, EventKind::kUnmap};
const MemoryType kTypes[] = {MemoryType::kDevice, MemoryType::kManaged, MemoryType::kPhysical, MemoryType::kMapping};

TEST(BundleSchema, EventKindNamesRoundTrip) {
  std::set<std::string> names;
  for (EventKind k : kKinds) {
    const std::string n = event_type_name(k);
    EXPECT_EQ(event_kind_from_name(n), k) << n;
    EXPECT_TRUE(names.insert(n).second) << "two kinds named " << n;
  }
  EXPECT_EQ(std::string(event_type_name(EventKind::kAlloc)), "allocation");
  EXPECT_EQ(std::string(event_type_name(EventKind::kFreeFailed)), "deallocation_failed");
  EXPECT_EQ(event_kind_from_name("free"), EventKind::kOther);
  EXPECT_EQ(event_kind_from_name(""), EventKind::kOther);
  EXPECT_EQ(std::string(event_type_name(EventKind::kOther)), "other");
  EXPECT_EQ(std::string(event_type_name(EventKind(9))), "other");  // a value no name has
}

TEST(BundleSchema, MemoryTypeNamesRoundTrip) {
  for (MemoryType t : kTypes) EXPECT_EQ(memory_type_from_name(memory_type_name(t)), t) << memory_type_name(t);
  EXPECT_EQ(std::string(memory_type_name(MemoryType::kPhysical)), "physical");
  EXPECT_EQ(memory_type_from_name("host"), MemoryType::kOther);
  EXPECT_EQ(std::string(memory_type_name(MemoryType::kOther)), "other");
}

TEST(BundleSchema, FrameKindAndBackendNames) {
  EXPECT_EQ(frame_kind_from_name(frame_kind_name(FrameKind::kPython)), FrameKind::kPython);
  EXPECT_EQ(frame_kind_from_name(frame_kind_name(FrameKind::kNative)), FrameKind::kNative);
  EXPECT_EQ(frame_kind_from_name("jit"), FrameKind::kOther);
  EXPECT_EQ(std::string(backend_name(Backend::kCuda)), "cuda");
  EXPECT_EQ(std::string(backend_name(Backend::kHip)), "rocm");  // Stormlog's name for HIP
}

// The ring packs kind and memory type into one byte: every value, kOther
// included, must come back out unchanged.
TEST(BundleSchema, RingPackingHoldsEveryValue) {
  for (EventKind k : {EventKind::kAlloc, EventKind::kUnmap, EventKind::kOther})
    for (MemoryType t : {MemoryType::kDevice, MemoryType::kMapping, MemoryType::kOther}) {
      Event e{};
      e.kind_type = pack_kind_type(k, t);
      EXPECT_EQ(event_kind(e), k);
      EXPECT_EQ(event_memory_type(e), t);
    }
}

TEST(BundleSchema, KeysAreUniqueJsonNames) {
  std::set<std::string> seen;
  for (const char* k : key::kAll) {
    const std::string s = k;
    EXPECT_TRUE(seen.insert(s).second) << "key listed twice: " << s;
    ASSERT_FALSE(s.empty());
    for (char c : s) EXPECT_TRUE(std::islower(static_cast<unsigned char>(c)) || c == '_') << s;
  }
  EXPECT_EQ(std::string(key::kSeq), "seq");
  EXPECT_EQ(std::string(file::kEvents), "events.json");
  EXPECT_EQ(kBundleSchemaVersion, 1);
}

}  // namespace
}  // namespace gpumemrec

// The calls whose frees are a destroyed context's (bundle-format.md, `api`):
// every hook that destroys one, and nothing that frees one allocation.
TEST(BundleSchema, ContextDestroyingApis) {
  for (const char* a : {"cudaDeviceReset", "cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2",
                        "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", "hipDeviceReset",
                        "hipDevicePrimaryCtxReset", "cuCtxDestroy", "cuCtxDestroy_v2"})
    EXPECT_TRUE(gpumemrec::api_destroys_context(a)) << a;
  for (const char* a : {"cudaFree", "cuMemFree_v2", "cuMemRelease", "hipFree", "cuDevicePrimaryCtxRetain", "cuCtxCreate_v2",
                        ""})
    EXPECT_FALSE(gpumemrec::api_destroys_context(a)) << a;
  // Which of them destroy a context of cuCtxCreate (the report words it so).
  for (const char* a : {"cuCtxDestroy", "cuCtxDestroy_v2", "cuCtxDetach"})
    EXPECT_TRUE(gpumemrec::api_destroys_created_context(a)) << a;
  for (const char* a : {"cudaDeviceReset", "cuDevicePrimaryCtxRelease_v2", "cuCtxDestroy_v3"})
    EXPECT_FALSE(gpumemrec::api_destroys_created_context(a)) << a;
}
