#include "blas/lt_problem.h"

#include "blas/lt_attributes.h"

namespace sim::blas::lt {
namespace {

bool read_layout(cublasLtMatrixLayout_t d, Layout* out) {
  if (!valid(d, kMatrixLayout)) return false;
  out->rows = get_unsigned(d, kMatrixLayout, CUBLASLT_MATRIX_LAYOUT_ROWS);
  out->cols = get_unsigned(d, kMatrixLayout, CUBLASLT_MATRIX_LAYOUT_COLS);
  out->ld = get_signed(d, kMatrixLayout, CUBLASLT_MATRIX_LAYOUT_LD);
  out->order = static_cast<int32_t>(get_signed(d, kMatrixLayout, CUBLASLT_MATRIX_LAYOUT_ORDER));
  out->batch = static_cast<int32_t>(get_signed(d, kMatrixLayout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT));
  return true;
}

bool op_ok(int64_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// op(X) as (rows, cols).
void op_dims(const Layout& x, int64_t op, uint64_t* rows, uint64_t* cols) {
  *rows = op == CUBLAS_OP_N ? x.rows : x.cols;
  *cols = op == CUBLAS_OP_N ? x.cols : x.rows;
}

bool ld_ok(const Layout& x, bool may_be_zero) {
  if (may_be_zero && x.ld == 0) return true;
  const uint64_t need = x.order == CUBLASLT_ORDER_ROW ? x.cols : x.rows;
  return x.ld >= 1 && static_cast<uint64_t>(x.ld) >= need;
}

bool shapes_ok(const Problem& p, int64_t opa, int64_t opb) {
  uint64_t am = 0, ak = 0, bk = 0, bn = 0;
  op_dims(p.a, opa, &am, &ak);
  op_dims(p.b, opb, &bk, &bn);
  if (am != p.d.rows || bn != p.d.cols || ak != bk) return false;
  if (p.c.rows != p.d.rows || p.c.cols != p.d.cols || p.c.order != p.d.order) return false;
  if (p.d.batch < 1 || p.a.batch != p.d.batch || p.b.batch != p.d.batch || p.c.batch != p.d.batch) return false;
  return ld_ok(p.a, false) && ld_ok(p.b, false) && ld_ok(p.d, false) && ld_ok(p.c, !p.c_is_d_desc);
}

}  // namespace

cublasStatus_t check_problem(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                             cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, Problem* p) {
  if (!valid(op, kMatmulDesc)) return CUBLAS_STATUS_INVALID_VALUE;
  const int64_t opa = get_signed(op, kMatmulDesc, CUBLASLT_MATMUL_DESC_TRANSA);
  const int64_t opb = get_signed(op, kMatmulDesc, CUBLASLT_MATMUL_DESC_TRANSB);
  if (!op_ok(opa) || !op_ok(opb)) return CUBLAS_STATUS_INVALID_VALUE;
  p->c_is_d_desc = c == nullptr || c == d;
  if (!read_layout(a, &p->a) || !read_layout(b, &p->b) || !read_layout(d, &p->d)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!read_layout(p->c_is_d_desc ? d : c, &p->c)) return CUBLAS_STATUS_INVALID_VALUE;
  return shapes_ok(*p, opa, opb) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

}  // namespace sim::blas::lt
