// The hooks' unit tests: the stub GPU library (stub_driver.cpp) opened the
// way Python opens libcuda (dlopen RTLD_LOCAL), and the events the recorder
// wrote since a point.
#pragma once
#include <dlfcn.h>

#include <vector>

#include "common/event.h"
#include "shim/record/recorder.h"

namespace stub {

// The stub library, opened once for the process (never closed: the real
// functions adopted from it stay valid).
inline void* handle() {
  static void* h = dlopen(GPUMEMREC_UNIT_STUB_LIB, RTLD_NOW | RTLD_LOCAL);
  return h;
}

// A function of the stub's own, found with glibc's dlsym (not ours).
template <typename Fn>
inline Fn own(const char* name) {
  return reinterpret_cast<Fn>(gpumemrec::real_dlsym()(handle(), name));
}

inline void behave(int rc, int errno_value) { own<void (*)(int, int)>("stub_behave")(rc, errno_value); }
inline int calls() { return own<int (*)()>("stub_calls")(); }

// The ring's next sequence number: events recorded from now on come after it.
inline uint64_t mark() { return gpumemrec::recorder()->ring.end(); }

inline std::vector<gpumemrec::Event> events_since(uint64_t from) {
  gpumemrec::Recorder* r = gpumemrec::recorder();
  std::vector<gpumemrec::Event> out;
  for (uint64_t s = from; s < r->ring.end(); ++s) {
    gpumemrec::Event e;
    if (r->ring.read(s, &e)) out.push_back(e);
  }
  return out;
}

}  // namespace stub
