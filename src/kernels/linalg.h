// L2: dense linear algebra on batches of small matrices (shaders/linalg.comp). No torch
// headers.
//
// Every matrix is column-major (LAPACK's layout): element (r, c) of a rows x cols matrix at
// c * rows + r; the matrices of a batch follow each other. The launchers only record work.
// The kernels are the unblocked LAPACK algorithms with one workgroup per matrix (see the
// shader's header for what a blocked version for large n would change).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// LU with partial pivoting (LAPACK getrf): A = P L U in place (L unit lower, strictly below
// the diagonal; U on and above it). The pivot of column k is the first row r >= k of the
// largest |a(r, k)|. pivots (int32, batch x min(m, n)) are 1-based row interchanges; info
// (int32, batch) is the first zero pivot (1-based), 0 when there is none.
struct LuFactor {
  ComputeKind kind = ComputeKind::Float32;  // Float32 or Float64 (the dtype of `a`)
  int64_t batch = 0, m = 0, n = 0;
  Operand a, pivots, info;
};
void lu_factor(Stream& stream, const LuFactor& problem);

// Cholesky (LAPACK potrf, lower): reads the lower triangle of each n x n matrix and replaces
// it with L (A = L L^T); the strictly upper triangle is left unchanged. info (int32, batch):
// the order of the first leading minor that is not positive definite (the factorization of
// that matrix stops there), else 0.
struct Cholesky {
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 0, n = 0;
  Operand a, info;
};
void cholesky(Stream& stream, const Cholesky& problem);

// Triangular solve from the left (BLAS trsm): op(A) X = B, B overwritten with X; op(A) = A
// or A^T; A upper or lower triangular (the other triangle is not read), unit diagonal or
// not. A: n x n with `a_batch_stride` elements between consecutive matrices (0: shared by
// the batch); B: n x nrhs.
struct TriangularSolve {
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 0, n = 0, nrhs = 0, a_batch_stride = 0;
  bool upper = false, transpose = false, unit_diagonal = false;
  Operand a, b;
};
void triangular_solve(Stream& stream, const TriangularSolve& problem);

// Row interchanges of B (n x nrhs) from LU pivots (int32, batch x k, 1-based): row i swaps
// with row pivots[i] - 1 for i = 0 .. k-1 (B <- P^T B, LAPACK laswp forward), or for
// i = k-1 .. 0 when `reverse` (B <- P B). Pivots outside [1, n] are skipped.
struct ApplyPivots {
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 0, n = 0, nrhs = 0, k = 0;
  bool reverse = false;
  Operand b, pivots;
};
void apply_pivots(Stream& stream, const ApplyPivots& problem);

// perm (int64, batch x m) = arange(m) with perm[i] and perm[pivots[i] - 1] swapped for
// i = 0 .. k-1 (pivots int32, batch x k; out-of-range pivots skipped): PyTorch's
// unpack_pivots.
struct PivotsToPermutation {
  int64_t batch = 0, m = 0, k = 0;
  Operand pivots, perm;
};
void pivots_to_permutation(Stream& stream, const PivotsToPermutation& problem);

// LDL^T with Bunch-Kaufman pivoting (LAPACK sytf2, uplo = 'L'): reads the lower triangle of
// each n x n matrix and replaces it with L (unit, strictly below the diagonal) and the 1x1 /
// 2x2 diagonal blocks of D. pivots (int32, batch x n) in LAPACK's convention (k + 1 for a 1x1
// block interchanged with row k, -(k + 1) on both rows of a 2x2 block); info (int32, batch):
// the first zero diagonal block (1-based), else 0. One invocation per matrix.
struct LdlFactor {
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 0, n = 0;
  Operand a, pivots, info;
};
void ldl_factor(Stream& stream, const LdlFactor& problem);

// A X = B with A's LdlFactor result (a, pivots; B's batch), in place on B (n x nrhs): LAPACK
// sytrs, uplo = 'L'. One invocation per column of B.
struct LdlSolve {
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 0, n = 0, nrhs = 0;
  Operand a, pivots, b;
};
void ldl_solve(Stream& stream, const LdlSolve& problem);

}  // namespace tvk::kernels
