// The Python code table (shim/record/python_code_table.cpp) on code objects
// laid out as CPython 3.12 lays them out (python_layout.h: PyCodeObject's
// co_filename, co_qualname, co_firstlineno, co_linetable and Py_SIZE; compact
// str objects; bytes objects), built in plain memory: one entry per live
// code object, a new id when another object takes over an address, names
// and files as UTF-8, one line per instruction, and threads interning at
// once.
#include "shim/record/python_code_table.h"

#include "tests/unit/record/python_fakes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace gpumemrec;
using namespace gpumemrec::pycode;

using namespace gpumemrec::pyfakes;

namespace {

Interp interp() {
  Interp in;
  in.layout = &L312();
  in.unicode_type = nullptr;  // the fakes carry no type pointer
  return in;
}

const CodeEntry* lookup(const char* code) {
  CaptureMemo memo;
  return code_entry_lookup(code, interp(), memo);
}

class CodeTable : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(code_table_init()); }
};

}  // namespace

TEST_F(CodeTable, EntryHoldsNameFileAndOneLinePerInstruction) {
  const uint32_t before = code_entry_count();
  char* code = make_code(ascii("Model.forward"), ascii("/src/model.py"), 40, make_bytes(table_for(1)));
  const CodeEntry* e = lookup(code);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(code_entry_count(), before + 1);
  EXPECT_EQ(e->id, before + 1);
  EXPECT_EQ(code_entry_by_id(e->id), e);
  EXPECT_STREQ(e->name, "Model.forward");
  ASSERT_NE(e->file, nullptr);
  EXPECT_STREQ(e->file->utf8, "/src/model.py");
  EXPECT_EQ(e->first_line, 40);
  ASSERT_EQ(e->units, 4u);
  EXPECT_EQ(std::vector<int32_t>(e->lines, e->lines + 4), (std::vector<int32_t>{41, 41, 43, -1}));
}

TEST_F(CodeTable, SameLiveObjectIsTheSameEntry) {
  char* name = ascii("step", 987654321);
  char* code = make_code(name, ascii("/src/train.py"), 10, make_bytes(table_for(0)));
  const CodeEntry* e = lookup(code);
  ASSERT_NE(e, nullptr);
  const uint32_t count = code_entry_count();
  EXPECT_EQ(lookup(code), e);
  // Through a capture's memo (recursion): the memo answers.
  CaptureMemo memo;
  const CodeRef* first = code_ref_for(code, interp(), memo);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->id, e->id);
  EXPECT_EQ(first->lines, e->lines);
  EXPECT_EQ(first->units, e->units);
  EXPECT_EQ(code_ref_for(code, interp(), memo), first);
  EXPECT_EQ(code_entry_count(), count);
  // An equal name in another str object (a re-created qualname): the same
  // function, the same id.
  put_ptr(code + L312().code_name, ascii("step"));
  EXPECT_EQ(lookup(code), e);
  EXPECT_EQ(code_entry_count(), count);
}

// A code object died and another was allocated at its address: whatever
// differs (name, first line, line table) makes a new entry, and the old id
// still names the old function (frames captured before refer to it).
TEST_F(CodeTable, AnotherObjectAtTheSameAddressGetsANewId) {
  char* file = ascii("/src/a.py");
  char* code = make_code(ascii("old_function"), file, 5, make_bytes(table_for(1)));
  const CodeEntry* old_entry = lookup(code);
  ASSERT_NE(old_entry, nullptr);
  const uint32_t old_id = old_entry->id;

  put_ptr(code + L312().code_name, ascii("new_function"));
  const CodeEntry* renamed = lookup(code);
  ASSERT_NE(renamed, nullptr);
  EXPECT_NE(renamed->id, old_id);
  EXPECT_STREQ(renamed->name, "new_function");
  EXPECT_STREQ(code_entry_by_id(old_id)->name, "old_function");

  put32(code + L312().code_firstlineno, 6);
  const CodeEntry* moved = lookup(code);
  ASSERT_NE(moved, nullptr);
  EXPECT_NE(moved->id, renamed->id);
  EXPECT_EQ(moved->lines[0], 7);

  // Same table object, its bytes changed (another table at its address).
  char* table = const_cast<char*>(pylayout::load_ptr(code + L312().code_linetable));
  ASSERT_NE(table, nullptr);
  table[pylayout::kBytesData + 1] = char(3 << 1);  // the first line delta: 3
  const CodeEntry* retabled = lookup(code);
  ASSERT_NE(retabled, nullptr);
  EXPECT_NE(retabled->id, moved->id);
  EXPECT_EQ(retabled->lines[0], 9);
  EXPECT_EQ(code_entry_by_id(moved->id)->lines[0], 7);
}

// The slot remembers the name str last found equal with its cached hash: a
// str at that address with other characters (and so another hash) is a
// new function; a hash computed after the entry was made keeps the id.
TEST_F(CodeTable, TheRememberedNameIsCheckedByItsHash) {
  char* name = ascii("alpha", 111);
  char* code = make_code(name, ascii("/src/h.py"), 3, make_bytes(table_for(0)));
  const CodeEntry* first = lookup(code);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(lookup(code), first);
  char* data = name + L312().ascii_size;
  std::memcpy(data, "omega", 5);
  put64(name + 24, 222);
  const CodeEntry* other = lookup(code);
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other->id, first->id);
  EXPECT_STREQ(other->name, "omega");

  char* late = ascii("beta");  // hash not computed yet
  char* code2 = make_code(late, ascii("/src/h.py"), 30, make_bytes(table_for(1)));
  const CodeEntry* beta = lookup(code2);
  ASSERT_NE(beta, nullptr);
  const uint32_t count = code_entry_count();
  put64(late + 24, 333);  // the interpreter hashes the str
  EXPECT_EQ(lookup(code2), beta);
  EXPECT_EQ(lookup(code2), beta);
  EXPECT_EQ(code_entry_count(), count);
}

TEST_F(CodeTable, OneFileEntryPerFileName) {
  char* c1 = make_code(ascii("f"), ascii("/src/shared.py"), 1, make_bytes(table_for(0)));
  char* c2 = make_code(ascii("g"), ascii("/src/shared.py"), 9, make_bytes(table_for(0)));
  char* c3 = make_code(ascii("h"), ascii("/src/other.py"), 9, make_bytes(table_for(0)));
  const CodeEntry* e1 = lookup(c1);
  const CodeEntry* e2 = lookup(c2);
  const CodeEntry* e3 = lookup(c3);
  ASSERT_TRUE(e1 && e2 && e3);
  EXPECT_EQ(e1->file, e2->file);
  EXPECT_NE(e1->file, e3->file);
  EXPECT_STREQ(e3->file->utf8, "/src/other.py");
}

TEST_F(CodeTable, NamesOfEveryKindBecomeUtf8) {
  char* file = ascii("/src/u.py");
  char* table = make_bytes(table_for(0));
  const CodeEntry* two = lookup(make_code(make_str(U"f\u00e9\u4e2d", 2), file, 1, table));
  ASSERT_NE(two, nullptr);
  EXPECT_STREQ(two->name, "f\xc3\xa9\xe4\xb8\xad");
  const CodeEntry* four = lookup(make_code(make_str(U"x\U0001F600", 4), file, 1, table));
  ASSERT_NE(four, nullptr);
  EXPECT_STREQ(four->name, "x\xf0\x9f\x98\x80");
  // A lone surrogate (valid in a Python str, not in UTF-8): U+FFFD.
  const CodeEntry* lone = lookup(make_code(make_str(std::u32string(1, char32_t(0xD800)), 2), file, 1, table));
  ASSERT_NE(lone, nullptr);
  EXPECT_STREQ(lone->name, "\xef\xbf\xbd");
}

TEST_F(CodeTable, UnreadableNameIsNoNameNotACrash) {
  char* name = new_obj();  // state 0: not a compact str
  put64(name + pylayout::kStrLength, 5);
  char* code = make_code(name, ascii("/src/v.py"), 3, make_bytes(table_for(0)));
  const CodeEntry* e = lookup(code);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->name, nullptr);
  EXPECT_EQ(lookup(code), e);  // and it still matches
  // No line table at all: every instruction on the first line.
  char* bare = make_code(ascii("bare"), ascii("/src/v.py"), 12, nullptr, 3);
  const CodeEntry* b = lookup(bare);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::vector<int32_t>(b->lines, b->lines + 3), (std::vector<int32_t>{12, 12, 12}));
}

TEST_F(CodeTable, IdsOutsideTheTableAreNull) {
  EXPECT_EQ(code_entry_by_id(0), nullptr);
  EXPECT_EQ(code_entry_by_id(uint64_t(code_entry_count()) + 1), nullptr);
  EXPECT_EQ(code_entry_by_id(~uint64_t(0)), nullptr);
}

// Threads capturing at once: a code object shared by all of them gets one
// id, each thread's own objects their own ids, nothing lost or doubled.
TEST_F(CodeTable, ThreadsInterningAtOnceAgreeOnIds) {
  constexpr int kThreads = 8, kShared = 64, kOwn = 32;
  std::vector<char*> shared;
  for (int i = 0; i < kShared; ++i)
    shared.push_back(make_code(ascii("shared_" + std::to_string(i)), ascii("/src/s.py"), i + 1,
                               make_bytes(table_for(1))));
  std::vector<std::vector<char*>> own(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kOwn; ++i)
      own[t].push_back(make_code(ascii("own_" + std::to_string(t) + "_" + std::to_string(i)), ascii("/src/o.py"),
                                 i + 1, make_bytes(table_for(1))));
  const uint32_t before = code_entry_count();
  std::vector<std::vector<uint32_t>> shared_ids(kThreads), own_ids(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int round = 0; round < 3; ++round)
        for (int i = 0; i < kShared; ++i) {
          const CodeEntry* e = lookup(shared[(i + t * 7) % kShared]);
          if (round == 0) shared_ids[t].push_back(e ? e->id : 0);
        }
      for (char* c : own[t]) {
        const CodeEntry* e = lookup(c);
        own_ids[t].push_back(e ? e->id : 0);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(code_entry_count(), before + kShared + kThreads * kOwn);
  std::vector<uint32_t> by_object(kShared, 0);
  std::set<uint32_t> all;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kShared; ++i) {
      const int obj = (i + t * 7) % kShared;
      const uint32_t id = shared_ids[t][i];
      ASSERT_NE(id, 0u);
      if (!by_object[obj]) by_object[obj] = id;
      EXPECT_EQ(by_object[obj], id) << "shared object " << obj;
      EXPECT_STREQ(code_entry_by_id(id)->name, ("shared_" + std::to_string(obj)).c_str());
    }
  for (uint32_t id : by_object) all.insert(id);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kOwn; ++i) {
      const uint32_t id = own_ids[t][i];
      EXPECT_TRUE(all.insert(id).second) << "id " << id << " given twice";
      EXPECT_STREQ(code_entry_by_id(id)->name,
                   ("own_" + std::to_string(t) + "_" + std::to_string(i)).c_str());
    }
}
