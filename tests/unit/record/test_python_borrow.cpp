// Borrowed Python frames (shim/record/python_borrow.h, python_stack.h): the
// backward entry points accepted, the marker words and the status they give,
// and the fault-tolerant read (shim/base/safe_read.h) the walk relies on.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shim/base/safe_read.h"
#include "shim/record/python_borrow.h"
#include "shim/record/python_code_table.h"
#include "shim/record/python_stack.h"
#include "tests/unit/record/python_fakes.h"

using namespace gpumemrec;
using namespace gpumemrec::pyfakes;

namespace {

// A CPython 3.12 interpreter's thread list in plain memory (python_layout.h
// row 12: tstate->cframe->current_frame, _PyInterpreterFrame f_executable 0,
// previous 8, prev_instr 56, owner 70; PyThreadState next 8, interp 16,
// native_thread_id 144).
char g_code_type[16];
char* g_interp = nullptr;
char* g_head = nullptr;
void* interp_main() { return g_interp; }
void* thread_head(void*) { return g_head; }

pywalk::Env env312() { return pywalk::Env{&L312(), g_code_type, nullptr}; }
PythonThreadsApi threads_api() {
  PythonThreadsApi a;
  a.interp_main = interp_main;
  a.thread_head = thread_head;
  return a;
}

char* code_of(const char* name, const char* file) {
  char* c = make_code(ascii(name), ascii(file), 40, make_bytes(table_for(1)));
  put_ptr(c + pylayout::kObType, g_code_type);
  return c;
}

// A frame running instruction 2 (line 43) of `code`, called from `previous`.
char* frame_of(char* code, char* previous) {
  char* f = new_obj();
  put_ptr(f + L312().frame_code, code);
  put_ptr(f + L312().frame_previous, previous);
  put_ptr(f + L312().frame_instr, code + L312().code_adaptive + 2 * pylayout::kCodeUnit);
  return f;
}

char* thread_state(char* innermost, uint64_t tid, char* next) {
  char* ts = new_obj();
  char* cframe = new_obj();
  put_ptr(cframe + L312().cframe_current, innermost);
  put_ptr(ts + L312().tstate_frame, cframe);
  put_ptr(ts + L312().tstate_next, next);
  put_ptr(ts + L312().tstate_interp, g_interp);
  put64(ts + L312().tstate_native_tid, int64_t(tid));
  return ts;
}

// An address whose page is no longer mapped: a freed thread state.
char* unmapped() {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(p, page);
  return static_cast<char*>(p);
}

struct Threads {
  char* own;     // the allocating thread: a state with no frame
  char* waiter;  // in _engine_run_backward, called from train_step
  char* busy;    // running Python elsewhere
};

Threads three_threads(char* after_busy = nullptr) {
  g_interp = new_obj();
  char* user = frame_of(code_of("train_step", "/home/u/train.py"), nullptr);
  char* entry = frame_of(code_of("_engine_run_backward", "/venv/lib/python3.12/site-packages/torch/autograd/graph.py"), user);
  char* other = frame_of(code_of("work", "/home/u/other.py"), nullptr);
  Threads t;
  t.busy = thread_state(other, 300, after_busy);
  t.waiter = thread_state(entry, 200, t.busy);
  t.own = thread_state(nullptr, 100, t.waiter);
  g_head = t.own;
  return t;
}

BorrowResult borrow(const char* own, uint64_t* out, uint32_t* n) {
  return borrow_python_frames(env312(), threads_api(), own, out, kMaxPythonFrames + 1, n);
}

std::string function_of(uint64_t word) {
  PythonFrameInfo info;
  return describe_python_frame(word, &info) ? info.function + ":" + std::to_string(info.line) : "?";
}

class Borrow : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(pycode::code_table_init()); }
};

}  // namespace

TEST(PythonBorrow, BackwardEntries) {
  const char* graph = "/venv/lib/python3.12/site-packages/torch/autograd/graph.py";
  const char* init = "/venv/lib/python3.12/site-packages/torch/autograd/__init__.py";
  EXPECT_TRUE(is_backward_entry(graph, "_engine_run_backward"));
  EXPECT_TRUE(is_backward_entry("torch/autograd/graph.py", "_engine_run_backward"));
  EXPECT_TRUE(is_backward_entry(init, "backward"));
  EXPECT_TRUE(is_backward_entry(init, "grad"));
  EXPECT_TRUE(is_backward_entry(init, "grad.<locals>.vjp"));  // 3.11+ qualified name
  EXPECT_TRUE(is_backward_entry(init, "vjp"));                // 3.10 co_name
  EXPECT_FALSE(is_backward_entry(graph, "backward"));
  EXPECT_FALSE(is_backward_entry(init, "_engine_run_backward"));
  EXPECT_FALSE(is_backward_entry("/x/mytorch/autograd/graph.py", "_engine_run_backward"));
  EXPECT_FALSE(is_backward_entry("/x/torch/autograd/graph.pyc", "_engine_run_backward"));
  EXPECT_FALSE(is_backward_entry("/home/u/train.py", "backward"));
  EXPECT_FALSE(is_backward_entry("", ""));
  EXPECT_EQ(kBackwardEntryCount, 5u);
}

TEST(PythonBorrow, MarkersAndStatus) {
  python_stack_init(true);
  const uint64_t frame = kPythonFrameTag | (uint64_t(7) << 24) | 42;
  const uint64_t borrowed[] = {0x401000, 0x402000, python_borrowed_marker(4242), frame};
  EXPECT_STREQ(python_status(borrowed, 4), "borrowed");
  uint32_t tid = 0;
  ASSERT_TRUE(python_lender(borrowed, 4, &tid));
  EXPECT_EQ(tid, 4242u);
  EXPECT_FALSE(python_borrow_ambiguous(borrowed, 4));
  EXPECT_TRUE(is_python_word(python_borrowed_marker(0)) && is_python_marker(python_borrowed_marker(0)));
  EXPECT_TRUE(is_python_marker(python_borrowed_marker(0xFFFFFFFFu)));
  EXPECT_FALSE(is_python_marker(frame));
  EXPECT_FALSE(is_python_borrowed(kPythonNativeThread));
  const uint64_t unknown[] = {0x401000, python_borrowed_marker(0), frame};
  ASSERT_TRUE(python_lender(unknown, 3, &tid));
  EXPECT_EQ(tid, 0u);

  const uint64_t ambiguous[] = {0x401000, kPythonBorrowAmbiguous};
  EXPECT_STREQ(python_status(ambiguous, 2), "native_thread");
  EXPECT_TRUE(python_borrow_ambiguous(ambiguous, 2));
  EXPECT_FALSE(python_lender(ambiguous, 2, &tid));
  const uint64_t native[] = {0x401000, kPythonNativeThread};
  EXPECT_STREQ(python_status(native, 2), "native_thread");
  EXPECT_FALSE(python_borrow_ambiguous(native, 2));
  const uint64_t own[] = {0x401000, frame};
  EXPECT_STREQ(python_status(own, 2), "captured");
  python_stack_init(false);
  EXPECT_STREQ(python_status(borrowed, 4), "disabled");
}

TEST(SafeRead, ReadsMappedAndRefusesUnmappedMemory) {
  ASSERT_TRUE(safe_read_available());
  const char text[] = "thread state";
  char buf[sizeof text] = {};
  EXPECT_TRUE(safe_read(buf, text, sizeof text));
  EXPECT_STREQ(buf, text);
  const long page = sysconf(_SC_PAGESIZE);
  char* p = static_cast<char*>(mmap(nullptr, size_t(page) * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 'x', size_t(page));
  ASSERT_EQ(munmap(p + page, size_t(page)), 0);  // a freed thread state's page
  errno = 1234;
  EXPECT_FALSE(safe_read(buf, p + page, 8));
  EXPECT_FALSE(safe_read(buf, p + page - 4, 8));  // straddles the end
  EXPECT_EQ(errno, 1234);                         // the program's errno is kept
  EXPECT_TRUE(safe_read(buf, p + page - 8, 8));
  EXPECT_FALSE(safe_read(buf, nullptr, 8));
  munmap(p, size_t(page));
}

TEST_F(Borrow, TheOneWaitingThreadLendsItsFrames) {
  const Threads t = three_threads();
  uint64_t out[kMaxPythonFrames + 1];
  uint32_t n = 0;
  ASSERT_EQ(borrow(t.own, out, &n), BorrowResult::kBorrowed);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(out[0], python_borrowed_marker(200));
  EXPECT_EQ(function_of(out[1]), "_engine_run_backward:43");
  EXPECT_EQ(function_of(out[2]), "train_step:43");
  // The caller itself waiting in backward is never its own lender.
  EXPECT_EQ(borrow(t.waiter, out, &n), BorrowResult::kNone);
  EXPECT_EQ(n, 0u);
}

TEST_F(Borrow, TwoWaitingThreadsAreAmbiguous) {
  const Threads t = three_threads();
  char* second = thread_state(
      frame_of(code_of("backward", "/venv/lib/python3.12/site-packages/torch/autograd/__init__.py"), nullptr), 400,
      nullptr);
  put_ptr(t.busy + L312().tstate_next, second);
  uint64_t out[kMaxPythonFrames + 1];
  uint32_t n = 0;
  EXPECT_EQ(borrow(t.own, out, &n), BorrowResult::kAmbiguous);
  EXPECT_EQ(n, 0u);
}

TEST_F(Borrow, HostileListsBorrowNothing) {
  uint64_t out[kMaxPythonFrames + 1];
  uint32_t n = 0;
  // A state freed while the list is read: its page is gone.
  Threads t = three_threads(unmapped());
  EXPECT_EQ(borrow(t.own, out, &n), BorrowResult::kUnknown);
  // A state of another interpreter (or reused memory).
  t = three_threads();
  put_ptr(t.busy + L312().tstate_interp, new_obj());
  EXPECT_EQ(borrow(t.own, out, &n), BorrowResult::kUnknown);
  // A list that loops: the walk stops after kMaxBorrowThreads states.
  t = three_threads();
  put_ptr(t.waiter + L312().tstate_frame, nullptr);
  put_ptr(t.busy + L312().tstate_next, t.own);
  EXPECT_EQ(borrow(t.own, out, &n), BorrowResult::kUnknown);
  // The lender's innermost frame freed: nothing read, nothing borrowed.
  t = three_threads();
  char* cframe = new_obj();
  put_ptr(cframe + L312().cframe_current, unmapped());
  put_ptr(t.waiter + L312().tstate_frame, cframe);
  EXPECT_EQ(borrow(t.own, out, &n), BorrowResult::kNone);
  // f_executable not a code object.
  t = three_threads();
  char* f = frame_of(code_of("_engine_run_backward", "/x/torch/autograd/graph.py"), nullptr);
  put_ptr(const_cast<char*>(pylayout::load_ptr(f)) + pylayout::kObType, new_obj());
  put_ptr(const_cast<char*>(pylayout::load_ptr(t.waiter + L312().tstate_frame)) + L312().cframe_current, f);
  EXPECT_EQ(borrow(t.own, out, &n), BorrowResult::kNone);
  EXPECT_EQ(n, 0u);
}

TEST_F(Borrow, AChainCutByAFreedFrameKeepsWhatWasRead) {
  const Threads t = three_threads();
  char* entry = const_cast<char*>(pylayout::load_ptr(pylayout::load_ptr(t.waiter + L312().tstate_frame) + L312().cframe_current));
  put_ptr(entry + L312().frame_previous, unmapped());
  uint64_t out[kMaxPythonFrames + 1];
  uint32_t n = 0;
  ASSERT_EQ(borrow(t.own, out, &n), BorrowResult::kBorrowed);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(function_of(out[1]), "_engine_run_backward:43");
}

TEST(SafeRead, PagesAreCopiedWholeAndKeptForTheWalk) {
  const size_t page = SafePages::kPage;
  char* p = static_cast<char*>(mmap(nullptr, page * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  for (size_t i = 0; i < page * 3; ++i) p[i] = char(i % 251);
  ASSERT_EQ(munmap(p + 2 * page, page), 0);
  static SafePages pages;  // 64 KiB: not on the test's stack
  pages.clear();
  char buf[64];
  ASSERT_TRUE(pages.read(buf, p + page - 16, 32));  // across two mapped pages
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(buf[i], char((page - 16 + i) % 251));
  EXPECT_FALSE(pages.read(buf, p + 2 * page - 8, 16));  // into the unmapped page
  EXPECT_FALSE(pages.read(buf, nullptr, 8));
  // A snapshot: a page already copied answers from the copy.
  p[10] = 'z';
  ASSERT_TRUE(pages.read(buf, p + 10, 1));
  EXPECT_EQ(buf[0], char(10 % 251));
  pages.clear();
  ASSERT_TRUE(pages.read(buf, p + 10, 1));
  EXPECT_EQ(buf[0], 'z');
  munmap(p, page * 2);
}
