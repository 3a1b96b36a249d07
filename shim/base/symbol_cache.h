// Cached answers of symbol look-ups (real functions, unhooked helpers such as
// cudaGetDevice), positive and negative, that survive libraries being
// unloaded and loaded again.
//
// Lifetime hazards:
// - A library can be dlclose'd and another (or the same) loaded at another
//   address: a cached address would then point into unmapped memory. Our
//   exported dlclose (hooks/dlclose_hook.cpp) calls note_library_unloaded()
//   when the loader really removed an object; every cached answer is stamped
//   with the unload generation it was checked at, and an answer from an older
//   generation is checked again (dladdr: still inside the object it came
//   from?) before use. The hot path reads two words and compares.
// - A failed look-up (a runtime without cudaGetDevice) is remembered with the
//   loader's count of loaded objects (dl_iterate_phdr's dlpi_adds): it is
//   redone only when something new was loaded, never on every call.
// - Stamps and addresses are separate words without a lock: two threads that
//   race store answers that were both true at their moment; a reader may pair
//   a newer stamp with either, which is a valid answer of that generation.
#pragma once
#include <atomic>
#include <cstdint>

namespace gpumemrec {

struct SymbolSlot {
  std::atomic<void*> addr{nullptr};   // kMissing: looked up, not found
  std::atomic<uint64_t> base{0};      // load address of the object addr lies in
  std::atomic<uint64_t> adds{0};      // dlpi_adds when a negative answer was found
  std::atomic<uint64_t> stamp{0};     // unload generation the answer is valid for; 0 = none
};

// The answer for `slot`, or nullptr when the symbol is absent. `lookup` is
// called (no lock of ours held) when there is no valid answer.
using LookupFn = void* (*)(const void* ctx);
void* cached_symbol(SymbolSlot& slot, LookupFn lookup, const void* ctx);

// Stores `addr` as the answer if the slot holds no valid positive answer;
// returns the valid answer afterwards (the first one stored wins).
void* adopt_symbol(SymbolSlot& slot, void* addr);

// Called after the loader unloaded at least one object.
void note_library_unloaded();
uint64_t unload_generation();

// Loader counters (dl_iterate_phdr's dlpi_adds / dlpi_subs).
uint64_t loader_adds();
uint64_t loader_subs();

}  // namespace gpumemrec
