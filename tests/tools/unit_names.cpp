// tools/names.cpp: short C++ names (template and parameter lists collapsed).
#include "common/names.h"

#include <gtest/gtest.h>

using gpumemrec::names::short_function;

namespace {

const std::string E = "\xE2\x80\xA6";  // …

TEST(ShortFunction, IssueExample) {
  EXPECT_EQ(short_function("(anonymous namespace)::allocate_optimizer_state(std::vector<void*, std::allocator<void*> >*, int)"),
            "(anonymous namespace)::allocate_optimizer_state(" + E + ")");
}

TEST(ShortFunction, TemplatesAndParameters) {
  EXPECT_EQ(short_function("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector<" + E + ">::push_back(" + E + ")");
  EXPECT_EQ(short_function("f()"), "f()");
  EXPECT_EQ(short_function("plain_c_function"), "plain_c_function");
  EXPECT_EQ(short_function("ns::S::method(int) const"), "ns::S::method(" + E + ") const");
  EXPECT_EQ(short_function("void (*foo(int))(double)"), "void (" + E + ")(" + E + ")");
}

TEST(ShortFunction, OperatorsKept) {
  EXPECT_EQ(short_function("operator<<(std::ostream&, X const&)"), "operator<<(" + E + ")");
  EXPECT_EQ(short_function("X::operator<(X const&) const"), "X::operator<(" + E + ") const");
  EXPECT_EQ(short_function("Foo::operator()(int) const"), "Foo::operator()(" + E + ") const");
  EXPECT_EQ(short_function("std::unique_ptr<T>::operator->() const"), "std::unique_ptr<" + E + ">::operator->() const");
  EXPECT_EQ(short_function("my_operator_helper<int>(int)"), "my_operator_helper<" + E + ">(" + E + ")");
}

TEST(ShortFunction, LambdasAndArrows) {
  EXPECT_EQ(short_function("run()::{lambda(int)#1}::operator()(int) const"),
            "run()::{lambda(" + E + ")#1}::operator()(" + E + ") const");
  EXPECT_EQ(short_function("std::function<auto (int) -> int>::operator()(int) const"),
            "std::function<" + E + ">::operator()(" + E + ") const");
}

TEST(ShortFunction, UnbalancedOrPlaceholderUnchanged) {
  EXPECT_EQ(short_function("truncated::name<int, std::alloc"), "truncated::name<int, std::alloc");
  EXPECT_EQ(short_function("broken)("), "broken)(");
  EXPECT_EQ(short_function("(no stack recorded)"), "(no stack recorded)");
  EXPECT_EQ(short_function(""), "");
}

TEST(FrameLabel, ShortAndVerbose) {
  gpumemrec::model::Frame f;
  f.kind = gpumemrec::model::FrameKind::kNative;
  f.function = "a::b<int>(long)";
  f.file = "/src/dir/b.cpp";
  f.line = 12;
  f.module = "/usr/lib/libx.so";
  EXPECT_EQ(gpumemrec::names::frame_label(f, false), "a::b<" + E + ">(" + E + ") (b.cpp:12)");
  EXPECT_EQ(gpumemrec::names::frame_label(f, true), "a::b<int>(long) (/src/dir/b.cpp:12)");
  // The key is the symbolized identity, not the address.
  gpumemrec::model::Frame g = f;
  g.offset = 0x9999;
  EXPECT_EQ(gpumemrec::names::frame_key(f), gpumemrec::names::frame_key(g));
  g.line = 13;
  EXPECT_NE(gpumemrec::names::frame_key(f), gpumemrec::names::frame_key(g));
}

TEST(PythonStatus, NativeThread) {
  EXPECT_EQ(gpumemrec::names::python_status_text("native_thread"), "no Python frames on this thread (native thread)");
  EXPECT_EQ(gpumemrec::names::python_status_text("captured"), "");
}

}  // namespace
