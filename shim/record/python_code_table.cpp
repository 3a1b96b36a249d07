// Interned Python code objects, validated on every lookup (no reference
// count is ever changed; see python_code_table.h and docs/design.md,
// "Python stacks").
//
// Lookup (lock-free): code address -> slot, whose one cache line holds the
// current entry's id, line array and file and the fields it is checked with
// against the live code object (a seqlock: a slot being rewritten under the
// intern lock sends the reader to the lock):
//   - its line table object's address, length and first 8 bytes (folded into
//     one word: `table`), its first line and its instruction count;
//   - its name's characters: when the str object is the one last found equal
//     to the entry's name and has the same cached hash (the interpreter's own
//     64-bit hash of the characters, computed once per str), taken as equal;
//     otherwise compared in full with the entry's copy;
//   - its file name's characters (once per file name object and capture).
// The entry itself is read only to compare characters. A known code object
// whose name's hash is computed therefore costs the slot's line, the code
// object's fields, its line table's header and its name's header.
// So the function name and file are always right (up to a 64-bit hash
// collision); a line is wrong only if a code object with the same name,
// file, first line, instruction count and line-table length died and another
// one took both its address and its line table's address with a table that
// differs after its first 8 bytes (docs/design.md, "Python stacks"). A
// failed check re-interns under the lock: a new entry with a new id replaces
// the slot's entry; the old entry stays (dump time resolves the words that
// carry its id).
#include "shim/record/python_code_table.h"

#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "shim/record/python_linetable.h"

namespace gpumemrec {
namespace pycode {

namespace {

using pylayout::Layout;
using pylayout::load_i32;
using pylayout::load_i64;
using pylayout::load_ptr;
using pylayout::StrView;

// One cache line per code object. Written under g_lock only (seq odd while
// written); key last, when the slot is new.
struct alignas(64) Slot {
  std::atomic<uintptr_t> key;          // code object address; 0 = empty
  std::atomic<uint32_t> seq;
  std::atomic<uint32_t> id;            // the latest entry for it (0: none)
  std::atomic<const int32_t*> lines;   // that entry's line per instruction
  std::atomic<const FileEntry*> file;  // that entry's file name
  std::atomic<const char*> name_obj;   // the str last found equal to its name (null: none)
  std::atomic<int64_t> name_hash;      // that str's cached hash
  std::atomic<uint64_t> table;         // table_word() of its line table
  std::atomic<uint32_t> units;
  std::atomic<int32_t> first_line;
};
static_assert(sizeof(Slot) == 64, "a slot is one cache line");

// A slot's fields as one reader saw them.
struct SlotView {
  uint32_t id, units;
  int32_t first_line;
  const int32_t* lines;
  const FileEntry* file;
  const char* name_obj;
  int64_t name_hash;
  uint64_t table;
};

constexpr uint32_t kMaxCodes = 1u << 17;     // ids 1 .. kMaxCodes-1
constexpr uint32_t kSlotBits = 18;
constexpr uint32_t kSlots = 1u << kSlotBits;
constexpr uint32_t kFileSlots = 1u << 14;
constexpr uint32_t kMaxUnits = 1u << 22;
constexpr int64_t kMaxNameChars = 4096;
constexpr int64_t kMaxTableBytes = 1 << 20;

Slot* g_slots = nullptr;
CodeEntry* g_entries = nullptr;
const FileEntry** g_files = nullptr;  // written and read under g_lock only
std::atomic<uint32_t> g_next{1};
std::atomic<bool> g_lock{false};

void lock() {
  for (int spins = 0;; ++spins) {
    if (!g_lock.load(std::memory_order_relaxed) && !g_lock.exchange(true, std::memory_order_acquire)) return;
    if (spins > 64) sched_yield();
    else __builtin_ia32_pause();
  }
}
void unlock() { g_lock.store(false, std::memory_order_release); }

inline uint32_t slot_of(uintptr_t code) {
  return uint32_t(((code >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
}

// The live object's fields the entry is computed from (its own memory and
// that of the objects it holds; all alive while its frame is on our chain).
struct Live {
  StrView name, file;
  const char* table_obj = nullptr;
  const uint8_t* table = nullptr;
  uint32_t table_bytes = 0;
  int32_t first_line = 0;
  uint32_t units = 0;
};

inline uint32_t clip_bytes(const StrView& v) {
  int64_t chars = v.length < kMaxNameChars ? v.length : kMaxNameChars;
  return uint32_t(chars) * v.kind;
}

// 3.11+: the index of the first instruction after the prologue; 0 for 3.10.
inline int32_t first_traceable(const char* code, const Layout& L) {
  return L.code_firsttraceable >= 0 ? load_i32(code + L.code_firsttraceable) : 0;
}

// Instructions (code units) of a code object.
inline uint32_t code_units(const char* code, const Layout& L) {
  int64_t units;
  if (L.code_code >= 0) {  // 3.10: co_code is a bytes object
    const char* bytecode = load_ptr(code + L.code_code);
    units = bytecode ? load_i64(bytecode + pylayout::kObSize) / pylayout::kCodeUnit : 0;
  } else {  // 3.11+: Py_SIZE(code) code units inline
    units = load_i64(code + pylayout::kObSize);
  }
  return uint32_t(units < 0 ? 0 : (units > kMaxUnits ? kMaxUnits : units));
}

Live read_live(const char* code, const Interp& in) {
  const Layout& L = *in.layout;
  Live l;
  l.name = pylayout::str_view(load_ptr(code + L.code_name), L, in.unicode_type);
  l.file = pylayout::str_view(load_ptr(code + L.code_filename), L, in.unicode_type);
  l.first_line = load_i32(code + L.code_firstlineno);
  l.units = code_units(code, L);
  const char* table = load_ptr(code + L.code_linetable);
  l.table_obj = table;
  int64_t tlen = table ? load_i64(table + pylayout::kObSize) : 0;
  if (table && tlen > 0) {
    l.table = reinterpret_cast<const uint8_t*>(table + pylayout::kBytesData);
    l.table_bytes = uint32_t(tlen > kMaxTableBytes ? kMaxTableBytes : tlen);
  }
  return l;
}

// Equal bytes? Names and small line tables (up to 64 bytes) inline, 8 bytes
// at a time (a libc call costs more than the compare); longer ones memcmp.
inline bool same_bytes(const uint8_t* a, const uint8_t* b, uint32_t n) {
  if (n > 64) return std::memcmp(a, b, n) == 0;
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    if (x != y) return false;
  }
  for (; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

inline bool same_chars(const StrView& v, const uint8_t* raw, uint32_t raw_bytes, uint8_t kind) {
  if (v.kind != kind) return false;
  uint32_t bytes = v.kind ? clip_bytes(v) : 0;
  return bytes == raw_bytes && same_bytes(v.data, raw, bytes);
}

// The file check, at most once per file name object and capture.
bool same_file(const char* obj, const Interp& in, const FileEntry* f, CaptureMemo& memo) {
  for (uint32_t i = 0; i < CaptureMemo::kFiles; ++i)
    if (obj && memo.file_obj[i] == obj && memo.file[i] == f) return true;
  StrView v = pylayout::str_view(obj, *in.layout, in.unicode_type);
  if (!same_chars(v, f ? f->raw : nullptr, f ? f->raw_bytes : 0, f ? f->kind : 0)) return false;
  uint32_t i = memo.next_file++ % CaptureMemo::kFiles;
  memo.file_obj[i] = obj;
  memo.file[i] = f;
  return true;
}

constexpr int kStrHash = 24;  // PyASCIIObject.hash (Py_hash_t; -1 = not computed)

// The first 8 bytes of a line table (zero-padded when shorter), as a
// little-endian word. Never through memory: a variable-length copy into a
// word followed by its 8-byte read stalls (no store-to-load forwarding),
// and short tables (3.10's PEP 626 tables of small functions) are common.
inline uint64_t table_head(const uint8_t* t, uint32_t n) {
  uint64_t head = 0;
  if (n >= 8) {
    std::memcpy(&head, t, 8);
    return head;
  }
  for (uint32_t i = 0; i < n; ++i) head |= uint64_t(t[i]) << (8 * i);
  return head;
}

// The line table's object address, length and first 8 bytes in one word
// (odd multipliers: a difference in any one of them always changes it).
inline uint64_t table_word(const char* obj, uint32_t bytes, uint64_t head) {
  return uint64_t(uintptr_t(obj)) * 0x9E3779B97F4A7C15ull + uint64_t(bytes) * 0xC2B2AE3D27D4EB4Full +
         head * 0x165667B19E3779F9ull;
}

inline const uint8_t* table_data(const char* table) {
  return table ? reinterpret_cast<const uint8_t*>(table + pylayout::kBytesData) : nullptr;
}

inline uint32_t table_bytes_of(const char* table) {
  int64_t tlen = table ? load_i64(table + pylayout::kObSize) : 0;
  return uint32_t(tlen <= 0 ? 0 : (tlen > kMaxTableBytes ? kMaxTableBytes : tlen));
}

// The name check (see the top of this file).
inline bool same_name(const CodeEntry* e, const char* obj, const Interp& in) {
  StrView v = pylayout::str_view(obj, *in.layout, in.unicode_type);
  int64_t hash = v.kind ? load_i64(obj + kStrHash) : -1;
  int64_t known = __atomic_load_n(&e->name_hash, __ATOMIC_RELAXED);
  if (obj == e->name_obj && hash != -1 && hash == known && v.kind == e->name_kind &&
      clip_bytes(v) == e->name_bytes)
    return true;
  if (!same_chars(v, e->name_raw, e->name_bytes, e->name_kind)) return false;
  // Same characters: from now on the cached hash of this str stands for
  // them (a str's hash never changes once computed).
  if (obj == e->name_obj && hash != -1 && known == -1)
    __atomic_store_n(const_cast<int64_t*>(&e->name_hash), hash, __ATOMIC_RELAXED);
  return true;
}

// Does `e` describe the live code object? Cheapest checks first; in the
// usual case this reads three cache lines of the code object, one of its
// line table, one of its name and the entry's.
bool matches(const CodeEntry* e, const char* code, const Interp& in, CaptureMemo& memo) {
  const Layout& L = *in.layout;
  const char* table = load_ptr(code + L.code_linetable);
  if (table != e->table_obj || load_i32(code + L.code_firstlineno) != e->first_line) return false;
  uint32_t tbytes = table_bytes_of(table);
  if (tbytes != e->table_bytes) return false;
  if (table_head(table_data(table), tbytes) != e->table_head)
    return false;
  if (code_units(code, L) != e->units) return false;
  if (!same_name(e, load_ptr(code + L.code_name), in)) return false;
  return same_file(load_ptr(code + L.code_filename), in, e->file, memo);
}

void append_utf8(char*& o, uint32_t c) {
  if (c < 0x80) {
    *o++ = char(c);
  } else if (c < 0x800) {
    *o++ = char(0xC0 | (c >> 6));
    *o++ = char(0x80 | (c & 63));
  } else if (c < 0x10000) {
    if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;  // lone surrogate
    *o++ = char(0xE0 | (c >> 12));
    *o++ = char(0x80 | ((c >> 6) & 63));
    *o++ = char(0x80 | (c & 63));
  } else {
    if (c > 0x10FFFF) c = 0xFFFD;
    *o++ = char(0xF0 | (c >> 18));
    *o++ = char(0x80 | ((c >> 12) & 63));
    *o++ = char(0x80 | ((c >> 6) & 63));
    *o++ = char(0x80 | (c & 63));
  }
}

// A malloc'ed UTF-8 copy of the first kMaxNameChars characters.
char* utf8_copy(const StrView& v) {
  if (!v.kind) return nullptr;
  uint32_t chars = clip_bytes(v) / v.kind;
  char* out = static_cast<char*>(std::malloc(size_t(chars) * 4 + 1));
  if (!out) return nullptr;
  char* o = out;
  for (uint32_t i = 0; i < chars; ++i) {
    uint32_t c;
    if (v.kind == 1) c = v.data[i];
    else if (v.kind == 2) { uint16_t u; std::memcpy(&u, v.data + 2 * i, 2); c = u; }
    else std::memcpy(&c, v.data + 4 * i, 4);
    append_utf8(o, c);
  }
  *o = 0;
  return out;
}

uint8_t* raw_copy(const void* data, uint32_t bytes) {
  if (!data || bytes == 0) return nullptr;
  auto* out = static_cast<uint8_t*>(std::malloc(bytes));
  if (out) std::memcpy(out, data, bytes);
  return out;
}

// Under the lock: the file entry for these characters (shared by content).
const FileEntry* intern_file(const StrView& v) {
  if (!v.kind) return nullptr;
  uint32_t bytes = clip_bytes(v);
  uint64_t h = 1469598103934665603ull ^ v.kind;
  for (uint32_t i = 0; i < bytes; ++i) h = (h ^ v.data[i]) * 1099511628211ull;
  uint32_t s = uint32_t(h) & (kFileSlots - 1);
  for (uint32_t probes = 0; probes < kFileSlots; ++probes, s = (s + 1) & (kFileSlots - 1)) {
    const FileEntry* f = g_files[s];
    if (!f) break;
    if (same_chars(v, f->raw, f->raw_bytes, f->kind)) return f;
  }
  auto* f = static_cast<FileEntry*>(std::calloc(1, sizeof(FileEntry)));
  if (!f) return nullptr;
  f->raw = raw_copy(v.data, bytes);
  if (bytes && !f->raw) {
    std::free(f);
    return nullptr;
  }
  f->raw_bytes = bytes;
  f->kind = v.kind;
  f->utf8 = utf8_copy(v);
  if (!g_files[s]) g_files[s] = f;  // a full file table only loses sharing
  return f;
}

// Under the lock: a new entry for the live code object; null when full.
const CodeEntry* make_entry(const char* code, const Interp& in) {
  uint32_t id = g_next.load(std::memory_order_relaxed);
  if (id >= kMaxCodes) return nullptr;
  Live l = read_live(code, in);
  CodeEntry& e = g_entries[id];
  e = CodeEntry{};
  e.id = id;
  e.table_obj = l.table_obj;
  e.first_line = l.first_line;
  e.units = l.units;
  e.table_raw = raw_copy(l.table, l.table_bytes);
  e.table_bytes = l.table_bytes;
  e.table_head = table_head(l.table, l.table_bytes);
  e.name_obj = load_ptr(code + in.layout->code_name);
  e.name_hash = l.name.kind ? load_i64(e.name_obj + kStrHash) : -1;
  e.name_bytes = l.name.kind ? clip_bytes(l.name) : 0;
  e.name_raw = raw_copy(l.name.data, e.name_bytes);
  e.name_kind = l.name.kind;
  // Out of memory: no entry (the frame gets id 0) rather than one that
  // would never match again.
  if ((l.table_bytes && !e.table_raw) || (e.name_bytes && !e.name_raw)) return nullptr;
  e.file = intern_file(l.file);
  if (l.file.kind && !e.file) return nullptr;
  if (l.units > 0) {
    auto* lines = static_cast<int32_t*>(std::malloc(size_t(l.units) * sizeof(int32_t)));
    if (!lines) return nullptr;
    decode_python_line_table(in.layout->line_table == pylayout::LineTable::kPep626 ? PyLineTableFormat::kPep626
                                                                                   : PyLineTableFormat::kLocations,
                             e.table_raw, e.table_bytes, e.first_line, lines, l.units);
    e.lines = lines;
  }
  e.name = utf8_copy(l.name);
  g_next.store(id + 1, std::memory_order_release);
  return &e;
}

// Under the lock: the slot of `code`, claimed when new; null when full.
Slot* slot_for(uintptr_t code) {
  uint32_t s = slot_of(code);
  for (uint32_t probes = 0; probes < kSlots; ++probes, s = (s + 1) & (kSlots - 1)) {
    uintptr_t k = g_slots[s].key.load(std::memory_order_relaxed);
    if (k == code || k == 0) return &g_slots[s];
  }
  return nullptr;
}

// Under the lock: the slot now describes entry `e`, whose name has the
// characters of the live str `name` (remembered only when its hash is
// known).
void write_slot(Slot& s, const CodeEntry& e, const char* name, const Interp& in) {
  StrView v = pylayout::str_view(name, *in.layout, in.unicode_type);
  int64_t hash = v.kind ? load_i64(name + kStrHash) : -1;
  const auto rlx = std::memory_order_relaxed;
  uint32_t seq = s.seq.load(rlx);
  s.seq.store(seq + 1, rlx);
  std::atomic_thread_fence(std::memory_order_release);
  s.id.store(e.id, rlx);
  s.lines.store(e.lines, rlx);
  s.file.store(e.file, rlx);
  s.name_obj.store(hash != -1 ? name : nullptr, rlx);
  s.name_hash.store(hash, rlx);
  s.table.store(table_word(e.table_obj, e.table_bytes, e.table_head), rlx);
  s.units.store(e.units, rlx);
  s.first_line.store(e.first_line, rlx);
  s.seq.store(seq + 2, std::memory_order_release);
}

// A consistent copy of a slot; false while it is being rewritten (or empty).
inline bool read_slot(const Slot& s, SlotView* v) {
  const auto rlx = std::memory_order_relaxed;
  uint32_t seq = s.seq.load(std::memory_order_acquire);
  v->id = s.id.load(rlx);
  v->lines = s.lines.load(rlx);
  v->file = s.file.load(rlx);
  v->name_obj = s.name_obj.load(rlx);
  v->name_hash = s.name_hash.load(rlx);
  v->table = s.table.load(rlx);
  v->units = s.units.load(rlx);
  v->first_line = s.first_line.load(rlx);
  std::atomic_thread_fence(std::memory_order_acquire);
  return (seq & 1) == 0 && s.seq.load(rlx) == seq && v->id != 0;
}

// The live name against a slot: the str the slot remembers with the same
// cached hash, or the entry's characters (then *remember: the slot should
// remember this str, whose hash is known).
inline bool slot_name_ok(const SlotView& v, const char* obj, const Interp& in, bool* remember) {
  // v.name_obj is non-null only with a known hash (!= -1).
  if (obj && obj == v.name_obj && (!in.unicode_type || load_ptr(obj + pylayout::kObType) == in.unicode_type) &&
      load_i64(obj + kStrHash) == v.name_hash)
    return true;
  const CodeEntry& e = g_entries[v.id];
  StrView sv = pylayout::str_view(obj, *in.layout, in.unicode_type);
  if (!same_chars(sv, e.name_raw, e.name_bytes, e.name_kind)) return false;
  *remember = sv.kind && load_i64(obj + kStrHash) != -1;
  return true;
}

// Does the slot describe the live code object? (see the top of this file)
inline bool slot_matches(const SlotView& v, const char* code, const Interp& in, CaptureMemo& memo, bool* remember) {
  const Layout& L = *in.layout;
  if (v.first_line != load_i32(code + L.code_firstlineno) || v.units != code_units(code, L)) return false;
  const char* table = load_ptr(code + L.code_linetable);
  uint32_t tbytes = table_bytes_of(table);
  if (v.table != table_word(table, tbytes, table_head(table_data(table), tbytes))) return false;
  return slot_name_ok(v, load_ptr(code + L.code_name), in, remember) &&
         same_file(load_ptr(code + L.code_filename), in, v.file, memo);
}

inline const Slot* find_slot(uintptr_t key) {
  uint32_t s = slot_of(key);
  for (uint32_t probes = 0; probes < kSlots; ++probes, s = (s + 1) & (kSlots - 1)) {
    uintptr_t k = g_slots[s].key.load(std::memory_order_acquire);
    if (k == key) return &g_slots[s];
    if (k == 0) return nullptr;
  }
  return nullptr;
}

// Under the lock: the slot's entry checked in full, a new entry when it
// does not match, and the slot rewritten from it.
bool intern(const char* code, const Interp& in, CaptureMemo& memo, CodeRef* out) {
  lock();
  Slot* slot = slot_for(uintptr_t(code));
  const CodeEntry* e = nullptr;
  if (slot) {
    uint32_t id = slot->id.load(std::memory_order_relaxed);
    e = id ? &g_entries[id] : nullptr;
    if (!e || !matches(e, code, in, memo)) e = make_entry(code, in);
    if (e) {
      write_slot(*slot, *e, load_ptr(code + in.layout->code_name), in);
      slot->key.store(uintptr_t(code), std::memory_order_release);  // no-op when re-interning
    }
  }
  unlock();
  if (!e) return false;
  *out = CodeRef{e->id, e->units, e->first_line, first_traceable(code, *in.layout), e->lines};
  return true;
}

}  // namespace

bool code_table_init() {
  if (g_slots) return true;
  void* slots = mmap(nullptr, sizeof(Slot) * kSlots, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void* entries = mmap(nullptr, sizeof(CodeEntry) * kMaxCodes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void* files = mmap(nullptr, sizeof(FileEntry*) * kFileSlots, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (slots == MAP_FAILED || entries == MAP_FAILED || files == MAP_FAILED) {
    if (slots != MAP_FAILED) munmap(slots, sizeof(Slot) * kSlots);
    if (entries != MAP_FAILED) munmap(entries, sizeof(CodeEntry) * kMaxCodes);
    if (files != MAP_FAILED) munmap(files, sizeof(FileEntry*) * kFileSlots);
    return false;
  }
  g_files = static_cast<const FileEntry**>(files);
  g_entries = static_cast<CodeEntry*>(entries);
  g_slots = static_cast<Slot*>(slots);
  return true;
}

void code_table_atfork_child() { g_lock.store(false, std::memory_order_relaxed); }

bool code_ref_lookup(const char* code, const Interp& in, CaptureMemo& memo, CodeRef* out) {
  const Slot* s = find_slot(uintptr_t(code));
  SlotView v;
  bool remember = false;
  if (s && read_slot(*s, &v) && slot_matches(v, code, in, memo, &remember) && !remember) {
    *out = CodeRef{v.id, v.units, v.first_line, first_traceable(code, *in.layout), v.lines};
    return true;
  }
  return intern(code, in, memo, out);
}

const CodeEntry* code_entry_lookup(const char* code, const Interp& in, CaptureMemo& memo) {
  CodeRef r;
  return code_ref_lookup(code, in, memo, &r) ? &g_entries[r.id] : nullptr;
}

const CodeEntry* code_entry_by_id(uint64_t id) {
  if (id == 0 || !g_entries || id >= g_next.load(std::memory_order_acquire)) return nullptr;
  return &g_entries[id];
}

uint32_t code_entry_count() { return g_next.load(std::memory_order_acquire) - 1; }

}  // namespace pycode
}  // namespace gpumemrec
