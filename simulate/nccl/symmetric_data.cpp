// Collectives over kept bytes, as if every rank sent what this one sent
// (symmetric_data.h).
#include "nccl/symmetric_data.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/kept_bytes.h"

namespace sim::nccl {
namespace {

// The simulated runtime's kept bytes (simulate/runtime/kept_bytes.cpp), found
// once: absent when NVIDIA's runtime or none is loaded.
struct Kept {
  int (*empty)() = nullptr;
  void (*read)(void*, uintptr_t, size_t) = nullptr;
  void (*write)(uintptr_t, const void*, size_t) = nullptr;
};

const Kept& kept() {
  static const Kept k = [] {
    Kept r;
    r.empty = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "gpumemrec_simulated_kept_empty"));
    r.read = reinterpret_cast<void (*)(void*, uintptr_t, size_t)>(dlsym(RTLD_DEFAULT, "gpumemrec_simulated_kept_read"));
    r.write = reinterpret_cast<void (*)(uintptr_t, const void*, size_t)>(
        dlsym(RTLD_DEFAULT, "gpumemrec_simulated_kept_write"));
    if (r.empty == nullptr || r.read == nullptr || r.write == nullptr) r = Kept{};
    return r;
  }();
  return k;
}

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

template <class T>
void times(unsigned char* p, size_t n, int k) {
  for (size_t i = 0; i < n; ++i) {
    T v;
    memcpy(&v, p + i * sizeof(T), sizeof(T));
    v = static_cast<T>(v * static_cast<T>(k));
    memcpy(p + i * sizeof(T), &v, sizeof(T));
  }
}

void bf16_times(unsigned char* p, size_t n, int k) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    memcpy(&f, &bits, 4);
    f *= static_cast<float>(k);
    memcpy(&bits, &f, 4);
    h = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);  // round to nearest even
    memcpy(p + 2 * i, &h, 2);
  }
}

// A reduction of `nranks` equal contributions, in place; false where it is
// not said (a product, a user op, half or 8-bit floats).
bool reduce_equal(unsigned char* p, size_t n, ncclDataType_t t, int op, int nranks) {
  if (op == ncclMax || op == ncclMin || op == ncclAvg) return true;
  if (op != ncclSum) return false;
  switch (t) {
    case ncclInt8: times<int8_t>(p, n, nranks); return true;
    case ncclUint8: times<uint8_t>(p, n, nranks); return true;
    case ncclInt32: times<int32_t>(p, n, nranks); return true;
    case ncclUint32: times<uint32_t>(p, n, nranks); return true;
    case ncclInt64: times<int64_t>(p, n, nranks); return true;
    case ncclUint64: times<uint64_t>(p, n, nranks); return true;
    case ncclFloat32: times<float>(p, n, nranks); return true;
    case ncclFloat64: times<double>(p, n, nranks); return true;
    case ncclBfloat16: bf16_times(p, n, nranks); return true;
    default: return false;
  }
}

constexpr size_t kMaxBytes = rt::kept::kMaxCopy;  // the runtime keeps no larger copy

// The receive buffer's new contents from this rank's contribution; empty
// when the result is not said.
std::vector<unsigned char> result(Coll kind, const void* send, size_t count, ncclDataType_t type, int op, int rank,
                                  int nranks) {
  const size_t elt = type_size(type), chunk = count * elt;
  const size_t in = kind == Coll::ReduceScatter ? chunk * nranks : chunk;
  const size_t out = kind == Coll::AllGather ? chunk * nranks : chunk;
  if (kind == Coll::Other || in > kMaxBytes || out > kMaxBytes) return {};
  std::vector<unsigned char> mine(in);
  kept().read(mine.data(), reinterpret_cast<uintptr_t>(send), in);
  std::vector<unsigned char> r;
  if (kind == Coll::AllGather) {
    for (int i = 0; i < nranks; ++i) r.insert(r.end(), mine.begin(), mine.end());
    return r;
  }
  if (kind == Coll::ReduceScatter) mine.erase(mine.begin(), mine.begin() + rank * chunk), mine.resize(chunk);
  if (kind == Coll::Broadcast) return mine;
  return reduce_equal(mine.data(), count, type, op, nranks) ? mine : std::vector<unsigned char>{};
}

}  // namespace

void symmetric_result(Coll kind, const void* send, void* recv, size_t count, ncclDataType_t type, int op, int root,
                      int rank, int nranks) {
  const Kept& k = kept();
  if (k.empty == nullptr || k.empty() || count == 0 || recv == nullptr) return;
  if (kind == Coll::Reduce && rank != root) return;  // only the root's buffer is written
  const uintptr_t dst = reinterpret_cast<uintptr_t>(recv);
  const size_t span = count * type_size(type) * (kind == Coll::AllGather ? nranks : 1);
  std::vector<unsigned char> r = send == nullptr ? std::vector<unsigned char>{} :
                                 result(kind, send, count, type, op, rank, nranks);
  if (r.empty())
    k.write(dst, nullptr, span);  // not said: zeros, as before
  else
    k.write(dst, r.data(), r.size());
}

}  // namespace sim::nccl
