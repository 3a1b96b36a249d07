// Interned Python code objects (see docs/design.md, "Python stacks").
//
// Maps a code object's address to an entry holding an id (what a frame word
// carries), the file and qualified name as UTF-8 and one line per
// instruction. Nothing here changes a reference count: a code object can die
// and another one can be allocated at its address. Every lookup therefore
// validates the entry against the live code object (which is alive while it
// is on the capturing thread's own frame chain): its name and file name
// (characters), its first line and instruction count, and its line table
// (address, length, first 8 bytes). A mismatch makes a NEW entry (new id);
// ids already handed out keep naming the old function. The fields a lookup
// checks are kept in the code object's slot of the map (one cache line), so
// a known code object is recognised without reading its entry.
#pragma once
#include <cstdint>
#include <string>

#include "shim/record/python_layout.h"

namespace gpumemrec {
namespace pycode {

// A file name, shared by the entries of one file (deduplicated by content).
struct FileEntry {
  const char* utf8;
  const uint8_t* raw;  // the str's data as the interpreter stores it
  uint32_t raw_bytes;
  uint8_t kind;        // 1, 2 or 4 bytes per character
};

// Published once and never freed (dump time reads it by id); only
// name_hash is written later (once, from -1). The first fields are what a
// lookup compares with the live code object (see python_code_table.cpp for
// exactly what and why).
struct CodeEntry {
  // Compared on every lookup (one cache line).
  const char* table_obj;     // the line table (bytes object) it was read from
  const char* name_obj;      // the name (str object) it was read from
  int32_t first_line;
  uint32_t units;            // instructions (code units)
  uint32_t table_bytes;      // line table bytes (at most 1 MiB are kept)
  uint32_t name_bytes;       // name characters x kind (at most 4096 characters)
  uint64_t table_head;       // the table's first 8 bytes (zero-padded)
  int64_t name_hash;         // the str's own cached hash; -1 until known
  const FileEntry* file;
  uint8_t name_kind;         // 0: the name was not readable
  // What the frame words and the dump need.
  uint32_t id;
  const uint8_t* name_raw;
  const uint8_t* table_raw;
  const int32_t* lines;      // line of each instruction (-1: none)
  const char* name;          // UTF-8 qualified name (3.10: co_name)
};

// What a frame word needs of a code object found in the table: its id, and
// its line per instruction (`units` of them) or its first line; and the
// index of its first traceable instruction (3.11+ `_co_firsttraceable`, read
// from the live object; 0 for 3.10), so that a frame whose code object is
// in the capture's memo needs nothing more of the code object.
struct CodeRef {
  uint32_t id;
  uint32_t units;
  int32_t first_line;
  int32_t first_traceable;
  const int32_t* lines;
};

// What reading a code object needs from the interpreter.
struct Interp {
  const pylayout::Layout* layout = nullptr;
  const void* unicode_type = nullptr;
};

// Validated lookups made during one capture (every code object on the
// capturing thread's frame chain stays alive until the capture ends, so a
// code object or file name checked once needs no second check).
struct CaptureMemo {
  static constexpr uint32_t kCodes = 8, kFiles = 4;
  // Only the keys are cleared (the hot path): a value is read only after
  // its key matched.
  uintptr_t code[kCodes] = {};
  const char* file_obj[kFiles] = {};
  CodeRef ref[kCodes];
  const FileEntry* file[kFiles];
  uint32_t next_file = 0;
};

// Reserves the tables (MAP_NORESERVE); false when the memory is not there.
bool code_table_init();
// The child of fork(): the intern lock may have been held by a thread that
// is gone.
void code_table_atfork_child();
// A live code object on the caller's own frame chain (table lookup and
// validation); false when the table is full or out of memory.
bool code_ref_lookup(const char* code, const Interp& in, CaptureMemo& memo, CodeRef* out);
// The same, answered from the capture's memo when this code object was
// already looked up in this capture (recursion, repeated methods); null
// when the table is full or out of memory.
inline uint32_t memo_index(const char* code) {
  return uint32_t(reinterpret_cast<uintptr_t>(code) >> 5) & (CaptureMemo::kCodes - 1);
}
// The memo's answer alone (null: not looked up yet in this capture).
inline const CodeRef* code_ref_memo(const char* code, const CaptureMemo& memo) {
  uint32_t m = memo_index(code);
  return memo.code[m] == reinterpret_cast<uintptr_t>(code) ? &memo.ref[m] : nullptr;
}
// The table's answer, kept in the memo.
inline const CodeRef* code_ref_add(const char* code, const Interp& in, CaptureMemo& memo) {
  uint32_t m = memo_index(code);
  if (!code_ref_lookup(code, in, memo, &memo.ref[m])) return nullptr;
  memo.code[m] = reinterpret_cast<uintptr_t>(code);
  return &memo.ref[m];
}
inline const CodeRef* code_ref_for(const char* code, const Interp& in, CaptureMemo& memo) {
  const CodeRef* r = code_ref_memo(code, memo);
  return r ? r : code_ref_add(code, in, memo);
}
// The entry of a live code object (the same lookup; tests and tools).
const CodeEntry* code_entry_lookup(const char* code, const Interp& in, CaptureMemo& memo);
// Dump time: the entry of an id, null when unknown.
const CodeEntry* code_entry_by_id(uint64_t id);
// Entries made so far (ids 1 .. count); for tests and the docs' figures.
uint32_t code_entry_count();

}  // namespace pycode
}  // namespace gpumemrec
