// L2: the orthogonal-factorization family (shaders/orthogonal.comp). No torch headers.
//
// Batched symmetric eigendecomposition and singular value decomposition of small and medium
// matrices, one workgroup per matrix, float32 or float64 (devices with shaderFloat64).
// Matrices are addressed by element strides: element (b, i, j) of an operand is at
// b * strides[0] + i * strides[1] + j * strides[2]; vectors (b, i) at b * s[0] + i * s[1].
// Every reachable offset must be < 2^31 (checked).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// A = V diag(values) V^T for symmetric A, by cyclic Jacobi. Only the lower (upper == false) or
// upper triangle of `in` is read. values (batch, n) ascending; vectors (batch, n, n) hold the
// eigenvectors as columns, in the same order (their signs are not unique).
struct SymmetricEigen {
  ComputeKind kind = ComputeKind::Float32;  // Float32 or Float64; operands of that dtype
  int64_t batch = 0, n = 0;
  bool upper = false;
  bool compute_vectors = true;
  int max_sweeps = 0;  // 0: the default cap
  Operand in;
  int64_t in_strides[3] = {};
  Operand values;
  int64_t values_strides[2] = {};
  Operand vectors;  // unused when !compute_vectors
  int64_t vectors_strides[3] = {};
  Operand work;  // batch * symmetric_eigen_work(n) elements of the compute dtype, contiguous
};
int64_t symmetric_eigen_work(int64_t n);

// A = U diag(values) V^T for A of `rows` x `cols` with rows >= cols (callers pass A^T and swap
// U / V for wide matrices), by one-sided Jacobi on the columns. values (batch, cols)
// descending, non-negative; left = U (batch, rows, full ? rows : cols), right = V
// (batch, cols, cols), not transposed. Columns of U for zero singular values, and the extra
// columns of a full U, complete an orthonormal basis.
struct SingularValueDecomposition {
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 0, rows = 0, cols = 0;
  bool compute_vectors = true;
  bool full = false;
  int max_sweeps = 0;  // 0: the default cap
  Operand in;
  int64_t in_strides[3] = {};
  Operand values;
  int64_t values_strides[2] = {};
  Operand left;  // unused when !compute_vectors
  int64_t left_strides[3] = {};
  Operand right;  // unused when !compute_vectors
  int64_t right_strides[3] = {};
  Operand work;  // batch * singular_value_work(rows, cols) elements of the compute dtype
};
int64_t singular_value_work(int64_t rows, int64_t cols);

// A = Q R by Householder reflections, in place, as LAPACK geqrf: R on and above the diagonal
// of `a` (rows x cols), reflector j's tail (its leading 1 implied) below the diagonal of
// column j, tau (batch, min(rows, cols)). R's diagonal signs are LAPACK's.
struct HouseholderQR {
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 0, rows = 0, cols = 0;
  Operand a;
  int64_t a_strides[3] = {};
  Operand tau;
  int64_t tau_strides[2] = {};
};

// C <- Q C, Q^T C (left), C Q, C Q^T (right) for Q = H_0 ... H_{count-1} given by geqrf's
// reflectors (batch, len, >= count) with len = rows of C (left) or cols of C (right), and tau
// (batch, >= count). `identity`: C is set to the identity first (orgqr: C = Q[:, :cols]).
struct ApplyReflectors {
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 0, rows = 0, cols = 0, count = 0;
  bool left = true, transpose = false, identity = false;
  Operand reflectors;
  int64_t reflectors_strides[3] = {};
  Operand tau;
  int64_t tau_strides[2] = {};
  Operand c;
  int64_t c_strides[3] = {};
};

// Record the factorization on `stream`; an empty batch records nothing. Throws
// std::invalid_argument for a kind other than Float32 / Float64, Float64 without shaderFloat64,
// operands of another dtype, negative sizes, rows < cols, null or misaligned addresses, or
// offsets beyond the 32-bit index range.
void symmetric_eigen(Stream& stream, const SymmetricEigen& problem);
void singular_value_decomposition(Stream& stream, const SingularValueDecomposition& problem);
void householder_qr(Stream& stream, const HouseholderQR& problem);
void apply_reflectors(Stream& stream, const ApplyReflectors& problem);

}  // namespace tvk::kernels
