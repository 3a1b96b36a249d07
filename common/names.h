// Readable names for frames and stacks: C++ function names with their
// template and parameter lists collapsed ("ns::f<…>(…)"), the Python stack
// status in words, and the frame labels shared by report, html and diff.
#pragma once

#include <string>

#include "common/bundle_model.h"

namespace gpumemrec::names {

// "(anonymous namespace)::alloc_state(std::vector<void*, std::allocator<void*> >*, int)"
//   -> "(anonymous namespace)::alloc_state(…)"
// "std::vector<int, std::allocator<int> >::push_back(int const&)"
//   -> "std::vector<…>::push_back(…)"
// Operator names (operator<, operator<<, operator(), operator->) are kept;
// "{lambda(int)#1}" becomes "{lambda(…)#1}". A name that is not balanced
// (truncated by the symbolizer) is returned as is.
std::string short_function(const std::string& full);

// A frame as one line. Short form: short_function(function) (file:line);
// verbose: the full function name. Frames without a symbol: module+0xoff.
std::string frame_label(const model::Frame& f, bool verbose);

// The identity of a frame across runs: kind, function, file and line, or
// module basename and offset for an unsymbolized native frame (never an
// absolute address or a stack id).
std::string frame_key(const model::Frame& f);

// Words for a stack's `python` field ("native_thread" -> "no Python frames
// on this thread (native thread)"); "" when there is nothing to say.
std::string python_status_text(const std::string& python);

}  // namespace gpumemrec::names
