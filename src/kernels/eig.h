// L2: the general (non-symmetric) eigendecomposition family (shaders/eig.comp). No torch
// headers.
//
// Batched eigenvalues and right eigenvectors of small and medium real matrices, LAPACK geev's
// algorithm and conventions (balancing, Hessenberg reduction, Francis double-shift QR,
// back-substitution, vectors of Euclidean norm 1 with the largest component real), one
// workgroup per matrix, float32 or float64 (devices with shaderFloat64). Matrices are
// addressed by element strides: element (b, i, j) at b * s[0] + i * s[1] + j * s[2]; the
// complex outputs by the element strides of their real view (the imaginary part follows the
// real part). Every reachable offset must be < 2^31 (checked).
//
// The QR iteration converges in a data-dependent number of steps. The launchers only record
// work: general_eigen records the whole pipeline with a QR budget that covers typical
// matrices (about twice the ~1.2 n^2 bulge-chase steps of random ones); the caller reads
// `state` afterwards (the only host read) and, for any matrix whose QR iteration has not
// ended (state[7] == 0), records general_eigen_resume with more steps, which re-runs the QR
// dispatches and the later phases.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// Largest order the kernel takes: each dispatch's work per invocation is bounded (see
// eig.cpp), which for larger n would take more than one eigenvector or Hessenberg column per
// dispatch. Callers handle larger matrices otherwise.
constexpr int64_t kMaxGeneralEigenOrder = 512;

// Per-matrix int32 state (kEigStateInts entries per matrix, contiguous):
//   [0] info: 0 success; k > 0 the QR iteration did not converge (LAPACK's info: the 1-based
//       row it was working on; the vectors are not written); -1 the matrix has an Inf or NaN
//       (nothing computed, the eigenvalues are NaN).
//   [7] 1 once the QR iteration has ended (converged or failed).
constexpr int kEigStateInts = 16;
constexpr int kEigStateInfo = 0;
constexpr int kEigStateDone = 7;

struct GeneralEigen {
  ComputeKind kind = ComputeKind::Float32;  // Float32 or Float64: the dtype of in / work
  int64_t batch = 0, n = 0;
  bool compute_vectors = true;
  // QR iterations allowed per eigenvalue without convergence (0: LAPACK's
  // 30 * max(10, active size)); tests lower it to reach the non-convergence path.
  int max_iterations = 0;
  Operand in;                 // (batch, n, n) real
  int64_t in_strides[3] = {};
  Operand values;             // (batch, n) complex: the real view's dtype (= kind's dtype)
  int64_t values_strides[2] = {};
  Operand vectors;            // (batch, n, n) complex (real-view dtype); unused without vectors
  int64_t vectors_strides[3] = {};
  Operand state;              // Int32, batch * kEigStateInts, contiguous
  Operand work;               // batch * general_eigen_work(n) elements of the kind's dtype
};
int64_t general_eigen_work(int64_t n);

// Records the decomposition on `stream`; an empty problem (batch or n 0) records nothing.
// Throws std::invalid_argument for a kind other than Float32 / Float64, Float64 without
// shaderFloat64, operands of another dtype, negative sizes, null or misaligned addresses, or
// offsets beyond the 32-bit index range.
void general_eigen(Stream& stream, const GeneralEigen& problem);

// Records `rounds` more QR dispatches (each a budget of steps; matrices that are done return
// at once) followed by the eigenvector and output phases again. Only after general_eigen of
// the same problem (same operands, work and state untouched in between).
void general_eigen_resume(Stream& stream, const GeneralEigen& problem, int rounds);

// QR dispatches that general_eigen records for order n (for the caller's growth policy).
int general_eigen_qr_rounds(int64_t n);

}  // namespace tvk::kernels
