#include "blas/lt_attributes.h"

#include <cstring>

namespace sim::blas::lt {
namespace {

constexpr size_t kTagBytes = 4;
constexpr uint32_t kOwnedBit = 1;  // the tags below are even
constexpr uint64_t kAllOnes = ~0ull;

// cublasLtMatrixLayoutAttribute_t. TYPE, ROWS, COLS and LD come from
// cublasLtMatrixLayoutCreate's arguments.
constexpr AttrSpec kLayoutAttrs[] = {
    {CUBLASLT_MATRIX_LAYOUT_TYPE, 4, 0, false},
    {CUBLASLT_MATRIX_LAYOUT_ORDER, 4, CUBLASLT_ORDER_COL, false},
    {CUBLASLT_MATRIX_LAYOUT_ROWS, 8, 0, false},
    {CUBLASLT_MATRIX_LAYOUT_COLS, 8, 0, false},
    {CUBLASLT_MATRIX_LAYOUT_LD, 8, 0, false},
    {CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 4, 1, false},
    {CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 8, 0, false},
    {CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, 8, 0, false},
    {CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, 4, 0, false},
};

// cublasLtMatmulDescAttributes_t. COMPUTE_TYPE and SCALE_TYPE come from
// cublasLtMatmulDescCreate's arguments. Id 16 is in no header but the
// library answers for it (4 bytes, 0), so it is kept too.
constexpr AttrSpec kDescAttrs[] = {
    {CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 4, 0, false},
    {CUBLASLT_MATMUL_DESC_SCALE_TYPE, 4, 0, false},
    {CUBLASLT_MATMUL_DESC_POINTER_MODE, 4, 0, false},
    {CUBLASLT_MATMUL_DESC_TRANSA, 4, CUBLAS_OP_N, false},
    {CUBLASLT_MATMUL_DESC_TRANSB, 4, CUBLAS_OP_N, false},
    {CUBLASLT_MATMUL_DESC_TRANSC, 4, CUBLAS_OP_N, false},
    {CUBLASLT_MATMUL_DESC_FILL_MODE, 4, CUBLAS_FILL_MODE_FULL, false},
    {CUBLASLT_MATMUL_DESC_EPILOGUE, 4, CUBLASLT_EPILOGUE_DEFAULT, false},
    {CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, 4, 0, false},
    {16, 4, 0, false},
    {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, 4, 0xffffffffu, false},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1, 0, false},
    {CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, 4, 0xffffffffu, false},
    {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, 4, 0, false},
    {CUBLASLT_MATMUL_DESC_B_SCALE_MODE, 4, 0, false},
    {CUBLASLT_MATMUL_DESC_C_SCALE_MODE, 4, 0, false},
    {CUBLASLT_MATMUL_DESC_D_SCALE_MODE, 4, 0, false},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, 4, 0, false},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, 8, 0, false},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, 4, 0, false},
    {CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, 8, 0, false},
};

// cublasLtMatmulPreferenceAttributes_t. MAX_WAVES_COUNT is a float (0.0f).
constexpr AttrSpec kPrefAttrs[] = {
    {CUBLASLT_MATMUL_PREF_SEARCH_MODE, 4, CUBLASLT_SEARCH_BEST_FIT, false},
    {CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 8, 0, false},
    {CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, 4, CUBLASLT_REDUCTION_SCHEME_MASK, false},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, 4, 256, false},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, 4, 256, false},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, 4, 256, false},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, 4, 256, false},
    {CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, 4, 0, false},
    {CUBLASLT_MATMUL_PREF_IMPL_MASK, 8, kAllOnes, false},
};

// cublasLtMatmulAlgoConfigAttributes_t, at the real library's offsets in
// cublasLtMatmulAlgo_t (bytes 0-33; id 10, in no header, is there too).
// CUBLASLT_ALGO_CONFIG_ID is cublasLtMatmulAlgoInit's: setting it is
// CUBLAS_STATUS_INVALID_VALUE there.
constexpr AttrSpec kAlgoAttrs[] = {
    {CUBLASLT_ALGO_CONFIG_ID, 4, 0, true},
    {CUBLASLT_ALGO_CONFIG_TILE_ID, 4, 0, false},
    {CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 4, 0, false},
    {CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, 4, 0, false},
    {CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, 4, 0, false},
    {CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, 4, 0, false},
    {CUBLASLT_ALGO_CONFIG_STAGES_ID, 4, 0, false},
    {CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, 2, 0, false},
    {CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, 2, 0, false},
    {10, 2, 0, false},
};

template <size_t N>
constexpr size_t count_of(const AttrSpec (&)[N]) {
  return N;
}

size_t header_bytes(const DescKind& kind) { return kind.tag != 0 ? kTagBytes : 0; }

// The spec of `attr` and its offset in the opaque structure, or nullptr.
const AttrSpec* find(const DescKind& kind, int attr, size_t* offset) {
  size_t at = header_bytes(kind);
  for (size_t i = 0; i < kind.count; ++i) {
    if (kind.attrs[i].id == attr) {
      *offset = at;
      return &kind.attrs[i];
    }
    at += kind.attrs[i].size;
  }
  return nullptr;
}

}  // namespace

const DescKind kMatrixLayout{0x4c61794eu, sizeof(cublasLtMatrixLayoutOpaque_t), kLayoutAttrs, count_of(kLayoutAttrs)};
const DescKind kMatmulDesc{0x4d6d4464u, sizeof(cublasLtMatmulDescOpaque_t), kDescAttrs, count_of(kDescAttrs)};
const DescKind kPreference{0x50726566u, sizeof(cublasLtMatmulPreferenceOpaque_t), kPrefAttrs, count_of(kPrefAttrs)};
const DescKind kAlgoConfig{0, sizeof(cublasLtMatmulAlgo_t), kAlgoAttrs, count_of(kAlgoAttrs)};

size_t state_bytes(const DescKind& kind) {
  size_t n = header_bytes(kind);
  for (size_t i = 0; i < kind.count; ++i) n += kind.attrs[i].size;
  return n;
}

void init(void* opaque, const DescKind& kind) {
  auto* bytes = static_cast<unsigned char*>(opaque);
  memset(bytes, 0, kind.capacity);
  if (kind.tag != 0) memcpy(bytes, &kind.tag, kTagBytes);
  for (size_t i = 0; i < kind.count; ++i) put(opaque, kind, kind.attrs[i].id, kind.attrs[i].dflt);
}

bool valid(const void* opaque, const DescKind& kind) {
  if (opaque == nullptr) return false;
  if (kind.tag == 0) return true;
  uint32_t tag = 0;
  memcpy(&tag, opaque, kTagBytes);
  return (tag & ~kOwnedBit) == kind.tag;
}

void set_owned(void* opaque, const DescKind& kind, bool owned) {
  const uint32_t tag = owned ? kind.tag | kOwnedBit : kind.tag;
  memcpy(opaque, &tag, kTagBytes);
}

bool owned(const void* opaque) {
  uint32_t tag = 0;
  memcpy(&tag, opaque, kTagBytes);
  return (tag & kOwnedBit) != 0;
}

void forget(void* opaque) { memset(opaque, 0, kTagBytes); }

cublasStatus_t set(void* opaque, const DescKind& kind, int attr, const void* buf, size_t size) {
  size_t at = 0;
  const AttrSpec* spec = valid(opaque, kind) ? find(kind, attr, &at) : nullptr;
  if (spec == nullptr || spec->read_only || buf == nullptr || size != spec->size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(static_cast<unsigned char*>(opaque) + at, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t get(const void* opaque, const DescKind& kind, int attr, void* buf, size_t size, size_t* written) {
  size_t at = 0;
  const AttrSpec* spec = valid(opaque, kind) ? find(kind, attr, &at) : nullptr;
  if (spec == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0) {
    if (written == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *written = spec->size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == nullptr || size != spec->size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, static_cast<const unsigned char*>(opaque) + at, size);
  if (written != nullptr) *written = size;
  return CUBLAS_STATUS_SUCCESS;
}

uint64_t get_unsigned(const void* opaque, const DescKind& kind, int attr) {
  size_t at = 0;
  const AttrSpec* spec = find(kind, attr, &at);
  uint64_t v = 0;
  if (spec != nullptr) memcpy(&v, static_cast<const unsigned char*>(opaque) + at, spec->size);  // little-endian
  return v;
}

int64_t get_signed(const void* opaque, const DescKind& kind, int attr) {
  size_t at = 0;
  const AttrSpec* spec = find(kind, attr, &at);
  const uint64_t v = get_unsigned(opaque, kind, attr);
  if (spec == nullptr || spec->size == 8) return static_cast<int64_t>(v);
  const unsigned bits = 8u * spec->size;
  const uint64_t sign = 1ull << (bits - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

void put(void* opaque, const DescKind& kind, int attr, uint64_t value) {
  size_t at = 0;
  const AttrSpec* spec = find(kind, attr, &at);
  if (spec != nullptr) memcpy(static_cast<unsigned char*>(opaque) + at, &value, spec->size);
}

}  // namespace sim::blas::lt
