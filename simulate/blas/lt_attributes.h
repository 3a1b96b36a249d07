// The attributes of cuBLASLt's descriptors and how they are kept.
//
// The descriptors are semi-opaque structures whose storage the caller may own
// (cublasLtMatrixLayoutInit & co.), so each keeps its whole state inside
// them: a 4-byte tag (which kind, initialized), then every attribute at its
// own offset, packed. Sizes and defaults are NVIDIA's: for each attribute,
// cublasLt*GetAttribute(..., sizeInBytes = 0, &sizeWritten) and a read of a
// fresh descriptor, on the 13.1.1.3 wheel's libcublasLt.so.13 with ctypes
// (these calls need no GPU); the header's comments name the same types.
// Set and Get follow that library too: a value is stored as given, never
// checked (TRANSA = 7 is accepted; cublasLtMatmul decides); an unknown
// attribute, a NULL buffer or a size that is not the attribute's is
// CUBLAS_STATUS_INVALID_VALUE; Get with sizeInBytes 0 says the size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "blas/types.h"

namespace sim::blas::lt {

struct AttrSpec {
  int id;
  uint8_t size;        // bytes
  uint64_t dflt;       // little-endian value of `size` bytes
  bool read_only;      // set by the library only (CUBLASLT_ALGO_CONFIG_ID)
};

struct DescKind {
  uint32_t tag;        // 0: no tag (cublasLtMatmulAlgo_t, plain data)
  size_t capacity;     // bytes of the opaque structure
  const AttrSpec* attrs;
  size_t count;
};

extern const DescKind kMatrixLayout;
extern const DescKind kMatmulDesc;
extern const DescKind kPreference;
extern const DescKind kAlgoConfig;

// Bytes the state of `kind` takes (tag and attributes).
size_t state_bytes(const DescKind& kind);

// Writes the tag and every default (the caller then sets the arguments of
// the create call). `opaque` holds kind.capacity bytes.
void init(void* opaque, const DescKind& kind);

// True if `opaque` was made by init() for `kind` (always, for untagged kinds).
bool valid(const void* opaque, const DescKind& kind);
// Whether the library allocated it (a *Create call) rather than the caller
// (a *Init call): only the former may be freed by *Destroy. Tagged kinds only.
void set_owned(void* opaque, const DescKind& kind, bool owned);
bool owned(const void* opaque);
// Clears the tag: a destroyed descriptor is no longer valid().
void forget(void* opaque);

cublasStatus_t set(void* opaque, const DescKind& kind, int attr, const void* buf, size_t size);
cublasStatus_t get(const void* opaque, const DescKind& kind, int attr, void* buf, size_t size, size_t* written);

// The value of a set-up descriptor's attribute, sign- or zero-extended.
int64_t get_signed(const void* opaque, const DescKind& kind, int attr);
uint64_t get_unsigned(const void* opaque, const DescKind& kind, int attr);
// Stores a value (library-internal: read-only attributes too).
void put(void* opaque, const DescKind& kind, int attr, uint64_t value);

}  // namespace sim::blas::lt
