#version 460
// Dense linear algebra on batches of small matrices (the LAPACK-style building blocks of
// torch.linalg's LU / Cholesky / triangular-solve family):
//   OP 0  getrf   LU with partial pivoting, in place         (A = P L U, L unit lower)
//   OP 1  potrf   Cholesky, lower, in place                  (A = L L^T)
//   OP 2  trsm    triangular solve from the left, in place   (op(A) X = B, B <- X)
//   OP 3  laswp   row interchanges of B from LU pivots       (B <- P^T B, or B <- P B)
//   OP 4  perm    LU pivots -> permutation (int64)           (lu_unpack)
//   OP 5  sytf2   LDL^T with Bunch-Kaufman pivoting, lower   (A = P L D L^T P^T)
//   OP 6  sytrs   solve with the LDL^T factorization         (B <- A^-1 B)
// Math in T = float (KIND 0) or double (KIND 3). Every matrix is column-major (LAPACK / the
// CPU's layout): element (r, c) of a rows x cols matrix is at c * rows + r, matrices of a
// batch follow each other (batch stride rows * cols), except that trsm's A may have another
// batch stride (0: one A shared by the batch).
//
// OP 0-3: one workgroup per matrix (grid-stride over the batch); the invocations cooperate on
// each elimination step, with barriers between the steps (unblocked, right-looking: the
// LAPACK *getf2 / *potf2 / *trsm algorithms; the order of the operations, and so the rounding,
// is that of the reference unblocked routines, not of a blocked LAPACK). All memory traffic
// goes to device memory; the trailing updates walk the matrix column-major so neighbouring
// invocations touch neighbouring elements.
//
// A blocked version for large n on real GPUs would factor a panel of nb columns with this
// kernel (the panel in shared memory), then apply the panel's row swaps to the rest (laswp),
// solve for the U block row (trsm) and update the trailing matrix with one GEMM
// (shaders/gemm.comp), giving O(n / nb) dispatches of GEMM-bound work instead of n
// latency-bound steps of one workgroup; potrf the same with syrk/GEMM; trsm would invert
// nb x nb diagonal blocks and turn the rest into GEMMs. Not built: the batched small
// matrices of the tests and OpInfo samples are latency-bound either way.
//
// OP 4, 5: one invocation per matrix of the batch (serial; sytf2 is LAPACK's unblocked
// *sytf2 step for step, so pivots and factors equal the CPU's; a parallel version would spread
// the rank-1 / rank-2 updates over a workgroup as getrf does). OP 6: one invocation per
// column of B (the columns are independent; each reads the whole factorization).
//
// Step ranges (devices with a loop limit, DeviceCapabilities::max_loop_iterations: lavapipe
// ends every loop of an invocation after 65535 iterations in total): getrf, potrf, trsm and
// sytf2 may run only the elimination steps [k, step_end) of each matrix (k = pc.k; step_end 0:
// all of them, in one dispatch), the launcher recording the ranges in order. The matrix
// carries the state; a later range reads back info (getrf, potrf: a failed potrf stops)
// and, for sytf2, the step to resume at from b_addr (int32 per matrix; a 2x2 pivot block may
// end one step past step_end).
// Built per (op, kind) by tools/build_shaders.py (linalg.variants.toml).
// ABI (mirrored by LinalgPush in src/kernels/linalg.cpp):
//   Specialization constant 0 = local_size_x (a power of two <= 256).
//   getrf: a (m x n, in place), piv (int32, batch x min(m, n), 1-based like LAPACK),
//          info (int32, batch: the first zero pivot, 1-based, else 0).
//   potrf: a (n x n, the lower triangle is read and overwritten; the upper one is left as
//          is), info (int32, batch: order of the first leading minor that is not positive
//          definite, else 0; the factorization stops there like LAPACK's).
//   trsm:  a (n x n, batch stride a_stride), b (n x nrhs, in place); flags bit 0 upper,
//          bit 1 transpose (solve A^T X = B), bit 2 unit diagonal.
//   laswp: b (n x nrhs, in place), piv (int32, batch x k): swaps row i with row piv[i] - 1
//          for i = 0 .. k-1 (flags bit 3 clear: B <- P^T B) or i = k-1 .. 0 (bit 3 set:
//          B <- P B). Pivots outside [1, n] are skipped (never an out-of-bounds access).
//   perm:  perm (int64, batch x m) = the permutation that the pivots (batch x k) apply to
//          0 .. m-1, as PyTorch's unpack_pivots: perm = arange(m); swap(perm[i],
//          perm[piv[i] - 1]) for i = 0 .. k-1 (out-of-range pivots skipped).
//   sytf2: a (n x n, the lower triangle is read and replaced with L and D, as LAPACK's
//          *sytf2 with uplo = 'L'), piv (int32, batch x n, LAPACK's convention: k + 1 for a
//          1x1 block that swapped with row k, -(k + 1) on both rows of a 2x2 block), info
//          (int32, batch: the first zero diagonal block, 1-based, else 0).
//   sytrs: a, piv as sytf2 wrote them, b (n x nrhs, in place; LAPACK's *sytrs, uplo = 'L').
//          Pivots outside [1, n] make the result meaningless but are never dereferenced.
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"

#ifndef OP
#define OP 0
#endif

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
  uint64_t a_addr;     //  0: the matrix (getrf, potrf, trsm's A)
  uint64_t b_addr;     //  8: trsm / laswp's B, perm's output
  uint64_t piv_addr;   // 16: pivots (int32)
  uint64_t info_addr;  // 24: info (int32)
  int batch;           // 32
  int m;               // 36: rows
  int n;               // 40: columns (getrf), order (potrf, trsm, laswp)
  int nrhs;            // 44: columns of B
  int k;               // 48: pivots per matrix (laswp, perm)
  int a_stride;        // 52: trsm: elements between the A of consecutive batch entries
  int flags;           // 56
  int step_end;        // 60: getrf / potrf / trsm / sytf2: end of this dispatch's steps (0: all)
} pc;                  // 64 bytes

#if KIND == KIND_FLOAT64
#define ELEM_BYTES 8
#else
#define ELEM_BYTES 4
#endif

layout(buffer_reference, std430, buffer_reference_align = ELEM_BYTES) buffer Mat { T v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Longs { int64_t v[]; };

const uint WG = gl_WorkGroupSize.x;

Mat matrix_at(uint64_t base, int b, int stride) {
  return Mat(base + uint64_t(b) * uint64_t(stride) * uint64_t(ELEM_BYTES));
}

#if OP == 0
// ---------------------------------------------------------------- getrf
shared T red_val[WG];
shared int red_idx[WG];

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int m = pc.m, n = pc.n;
  const int kmax = min(m, n);
  for (int b = int(gl_WorkGroupID.x); b < pc.batch; b += int(gl_NumWorkGroups.x)) {
    Mat A = matrix_at(pc.a_addr, b, m * n);
    Ints piv = Ints(pc.piv_addr + uint64_t(b) * uint64_t(kmax) * 4ul);
    int info = pc.k > 0 ? Ints(pc.info_addr).v[b] : 0;
    barrier();  // read by all before invocation 0 rewrites it
    const int k_end = pc.step_end > 0 ? min(pc.step_end, kmax) : kmax;
    for (int k = pc.k; k < k_end; ++k) {
      // Pivot: the first row of the largest |a(r, k)|, r >= k (LAPACK's i*amax). Each
      // invocation scans rows in increasing order keeping the first maximum; the tree keeps
      // the larger value, the smaller row on ties. -1 / m mark "no row" (NaN compares false).
      T best = T(-1);
      int best_row = m;
      for (int r = k + tid; r < m; r += int(WG)) {
        const T v = abs(A.v[k * m + r]);
        if (v > best) { best = v; best_row = r; }
      }
      red_val[tid] = best;
      red_idx[tid] = best_row;
      barrier();
      for (uint s = WG / 2; s > 0; s >>= 1) {
        if (tid < int(s)) {
          const T ov = red_val[tid + s];
          const int oi = red_idx[tid + s];
          if (ov > red_val[tid] || (ov == red_val[tid] && oi < red_idx[tid])) {
            red_val[tid] = ov;
            red_idx[tid] = oi;
          }
        }
        barrier();
      }
      const int p = red_idx[0] < m ? red_idx[0] : k;  // all NaN: keep the diagonal row
      barrier();  // everyone has read red_idx[0] before the next step overwrites it
      if (tid == 0) piv.v[k] = p + 1;
      // Swap rows k and p across the whole matrix (the L part too, as getrf does).
      if (p != k) {
        for (int c = tid; c < n; c += int(WG)) {
          const T t = A.v[c * m + k];
          A.v[c * m + k] = A.v[c * m + p];
          A.v[c * m + p] = t;
        }
      }
      barrier();
      // Multipliers: column k below the diagonal divided by the pivot. A zero pivot (the whole
      // column below is zero then) is recorded in info and left unscaled, as *getf2 does.
      const T pivot = A.v[k * m + k];
      if (pivot != T(0)) {
        for (int r = k + 1 + tid; r < m; r += int(WG)) A.v[k * m + r] = A.v[k * m + r] / pivot;
      } else if (info == 0) {
        info = k + 1;
      }
      barrier();
      // Rank-1 update of the trailing (m-k-1) x (n-k-1) block, column-major order.
      const int rows = m - k - 1, cols = n - k - 1;
      if (rows > 0 && cols > 0) {
        const int items = rows * cols;
        for (int e = tid; e < items; e += int(WG)) {
          const int r = k + 1 + e % rows;
          const int c = k + 1 + e / rows;
          A.v[c * m + r] -= A.v[k * m + r] * A.v[c * m + k];
        }
      }
      barrier();
    }
    if (tid == 0) Ints(pc.info_addr).v[b] = info;
    barrier();
  }
}

#elif OP == 1
// ---------------------------------------------------------------- potrf (lower)
void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int n = pc.n;
  for (int b = int(gl_WorkGroupID.x); b < pc.batch; b += int(gl_NumWorkGroups.x)) {
    Mat A = matrix_at(pc.a_addr, b, n * n);
    int info = pc.k > 0 ? Ints(pc.info_addr).v[b] : 0;
    barrier();  // read by all before invocation 0 rewrites it
    const int k_end = info != 0 ? 0 : (pc.step_end > 0 ? min(pc.step_end, n) : n);
    for (int k = pc.k; k < k_end; ++k) {
      const T d = A.v[k * n + k];  // a(k, k) minus the updates of the previous steps
      barrier();                   // read by all before invocation 0 overwrites it
      if (!(d > T(0))) {           // not positive definite (or NaN): stop like *potf2
        info = k + 1;
        break;                     // uniform: every invocation read the same d
      }
      const T s = sqrt(d);
      if (tid == 0) A.v[k * n + k] = s;
      for (int r = k + 1 + tid; r < n; r += int(WG)) A.v[k * n + r] = A.v[k * n + r] / s;
      barrier();
      // Update the trailing lower triangle: a(r, c) -= l(r, k) l(c, k), c > k, r >= c.
      const int rest = n - k - 1;
      const int items = rest * rest;
      for (int e = tid; e < items; e += int(WG)) {
        const int r = k + 1 + e % rest;
        const int c = k + 1 + e / rest;
        if (r >= c) A.v[c * n + r] -= A.v[k * n + r] * A.v[k * n + c];
      }
      barrier();
    }
    if (tid == 0) Ints(pc.info_addr).v[b] = info;
    barrier();
  }
}

#elif OP == 2
// ---------------------------------------------------------------- trsm (left)
void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int n = pc.n, nrhs = pc.nrhs;
  const bool upper = (pc.flags & 1) != 0;
  const bool trans = (pc.flags & 2) != 0;
  const bool unit = (pc.flags & 4) != 0;
  // op(A) is lower triangular when A is lower and not transposed, or upper and transposed:
  // then the rows are solved first to last (forward substitution), else last to first.
  const bool forward = upper == trans;
  for (int b = int(gl_WorkGroupID.x); b < pc.batch; b += int(gl_NumWorkGroups.x)) {
    Mat A = matrix_at(pc.a_addr, b, pc.a_stride);
    Mat B = matrix_at(pc.b_addr, b, n * nrhs);
    const int step_end = pc.step_end > 0 ? min(pc.step_end, n) : n;
    for (int step = pc.k; step < step_end; ++step) {
      const int i = forward ? step : n - 1 - step;
      // x(i, :) = b(i, :) / op(A)(i, i)
      if (!unit) {
        const T d = A.v[i * n + i];
        for (int c = tid; c < nrhs; c += int(WG)) B.v[c * n + i] = B.v[c * n + i] / d;
        barrier();
      }
      // b(r, :) -= op(A)(r, i) x(i, :) for the rows not solved yet.
      const int r0 = forward ? i + 1 : 0;
      const int rows = forward ? n - i - 1 : i;
      const int items = rows * nrhs;
      for (int e = tid; e < items; e += int(WG)) {
        const int r = r0 + e % rows;
        const int c = e / rows;
        const T a = trans ? A.v[r * n + i] : A.v[i * n + r];
        B.v[c * n + r] -= a * B.v[c * n + i];
      }
      barrier();
    }
  }
}

#elif OP == 3
// ---------------------------------------------------------------- laswp
void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int n = pc.n, nrhs = pc.nrhs, k = pc.k;
  const bool reverse = (pc.flags & 8) != 0;
  for (int b = int(gl_WorkGroupID.x); b < pc.batch; b += int(gl_NumWorkGroups.x)) {
    Mat B = matrix_at(pc.b_addr, b, n * nrhs);
    Ints piv = Ints(pc.piv_addr + uint64_t(b) * uint64_t(k) * 4ul);
    // Each invocation owns whole columns: the swaps of a column are sequential, columns
    // are independent (no barrier needed).
    for (int c = tid; c < nrhs; c += int(WG)) {
      for (int s = 0; s < k; ++s) {
        const int i = reverse ? k - 1 - s : s;
        const int p = piv.v[i] - 1;
        if (p != i && p >= 0 && p < n && i < n) {
          const T t = B.v[c * n + i];
          B.v[c * n + i] = B.v[c * n + p];
          B.v[c * n + p] = t;
        }
      }
    }
  }
}

#elif OP == 4
// ---------------------------------------------------------------- pivots -> permutation
void main() {
  const int m = pc.m, k = pc.k;
  for (int b = int(gl_GlobalInvocationID.x); b < pc.batch;
       b += int(gl_NumWorkGroups.x * gl_WorkGroupSize.x)) {
    Longs perm = Longs(pc.b_addr + uint64_t(b) * uint64_t(m) * 8ul);
    Ints piv = Ints(pc.piv_addr + uint64_t(b) * uint64_t(k) * 4ul);
    for (int r = 0; r < m; ++r) perm.v[r] = int64_t(r);
    for (int i = 0; i < k && i < m; ++i) {
      const int p = piv.v[i] - 1;
      if (p >= 0 && p < m && p != i) {
        const int64_t t = perm.v[i];
        perm.v[i] = perm.v[p];
        perm.v[p] = t;
      }
    }
  }
}
#elif OP == 5
// ---------------------------------------------------------------- sytf2 (lower)
void swap_entries(Mat A, int i, int j) {
  const T t = A.v[i];
  A.v[i] = A.v[j];
  A.v[j] = t;
}

void main() {
  const int n = pc.n;
  const T alpha = (T(1) + sqrt(T(17))) / T(8);
  for (int b = int(gl_GlobalInvocationID.x); b < pc.batch;
       b += int(gl_NumWorkGroups.x * gl_WorkGroupSize.x)) {
    Mat A = matrix_at(pc.a_addr, b, n * n);
    Ints piv = Ints(pc.piv_addr + uint64_t(b) * uint64_t(n) * 4ul);
    Ints resume = Ints(pc.b_addr);
    int info = pc.k > 0 ? Ints(pc.info_addr).v[b] : 0;
    int k = pc.k > 0 ? resume.v[b] : 0;
    const int k_end = pc.step_end > 0 ? min(pc.step_end, n) : n;
    while (k < k_end) {
      int kstep = 1;
      int kp = k;
      const T absakk = abs(A.v[k * n + k]);
      // Largest off-diagonal |a(i, k)| below the diagonal (first one on ties).
      int imax = k;
      T colmax = T(0);
      for (int i = k + 1; i < n; ++i) {
        const T v = abs(A.v[k * n + i]);
        if (v > colmax || imax == k) { colmax = v; imax = i; }
      }
      if (max(absakk, colmax) == T(0)) {
        if (info == 0) info = k + 1;  // a zero column: D(k, k) = 0, no interchange
      } else {
        if (absakk < alpha * colmax) {
          // rowmax: the largest off-diagonal entry of row / column imax
          T rowmax = T(0);
          for (int j = k; j < imax; ++j) rowmax = max(rowmax, abs(A.v[j * n + imax]));
          for (int i = imax + 1; i < n; ++i) rowmax = max(rowmax, abs(A.v[imax * n + i]));
          if (absakk >= alpha * colmax * (colmax / rowmax)) {
            kp = k;
          } else if (abs(A.v[imax * n + imax]) >= alpha * rowmax) {
            kp = imax;
          } else {
            kp = imax;
            kstep = 2;
          }
        }
        // Symmetric interchange of rows / columns kk and kp of the trailing matrix.
        const int kk = k + kstep - 1;
        if (kp != kk) {
          for (int i = kp + 1; i < n; ++i) swap_entries(A, kk * n + i, kp * n + i);
          for (int j = kk + 1; j < kp; ++j) swap_entries(A, kk * n + j, j * n + kp);
          swap_entries(A, kk * n + kk, kp * n + kp);
          if (kstep == 2) swap_entries(A, k * n + k + 1, k * n + kp);
        }
        if (kstep == 1) {
          // A22 -= a21 a21^T / d11; l21 = a21 / d11
          const T d11 = T(1) / A.v[k * n + k];
          for (int j = k + 1; j < n; ++j) {
            const T xj = A.v[k * n + j];
            if (xj != T(0)) {
              const T t = -d11 * xj;
              for (int i = j; i < n; ++i) A.v[j * n + i] += A.v[k * n + i] * t;
            }
          }
          for (int i = k + 1; i < n; ++i) A.v[k * n + i] *= d11;
        } else if (k < n - 2) {
          // 2x2 pivot block D = [d(k,k) d(k+1,k); d(k+1,k) d(k+1,k+1)]
          T d21 = A.v[k * n + k + 1];
          const T d11 = A.v[(k + 1) * n + k + 1] / d21;
          const T d22 = A.v[k * n + k] / d21;
          const T t = T(1) / (d11 * d22 - T(1));
          d21 = t / d21;
          for (int j = k + 2; j < n; ++j) {
            const T wk = d21 * (d11 * A.v[k * n + j] - A.v[(k + 1) * n + j]);
            const T wkp1 = d21 * (d22 * A.v[(k + 1) * n + j] - A.v[k * n + j]);
            for (int i = j; i < n; ++i)
              A.v[j * n + i] = A.v[j * n + i] - A.v[k * n + i] * wk - A.v[(k + 1) * n + i] * wkp1;
            A.v[k * n + j] = wk;
            A.v[(k + 1) * n + j] = wkp1;
          }
        }
      }
      if (kstep == 1) {
        piv.v[k] = kp + 1;
      } else {
        piv.v[k] = -(kp + 1);
        piv.v[k + 1] = -(kp + 1);
      }
      k += kstep;
    }
    if (pc.step_end > 0) resume.v[b] = k;
    Ints(pc.info_addr).v[b] = info;
  }
}

#elif OP == 6
// ---------------------------------------------------------------- sytrs (lower)
void main() {
  const int n = pc.n, nrhs = pc.nrhs;
  const int total = pc.batch * nrhs;
  for (int q = int(gl_GlobalInvocationID.x); q < total;
       q += int(gl_NumWorkGroups.x * gl_WorkGroupSize.x)) {
    const int b = q / nrhs, c = q % nrhs;
    Mat A = matrix_at(pc.a_addr, b, n * n);
    Mat B = matrix_at(pc.b_addr, b, n * nrhs);
    Ints piv = Ints(pc.piv_addr + uint64_t(b) * uint64_t(n) * 4ul);
    const int o = c * n;  // column c of B
    // Solve L D y = P^T b, first to last.
    int k = 0;
    while (k < n) {
      if (piv.v[k] > 0) {
        const int kp = piv.v[k] - 1;
        if (kp != k && kp >= 0 && kp < n) {
          const T t = B.v[o + k]; B.v[o + k] = B.v[o + kp]; B.v[o + kp] = t;
        }
        const T bk = B.v[o + k];
        for (int i = k + 1; i < n; ++i) B.v[o + i] -= A.v[k * n + i] * bk;
        B.v[o + k] = bk * (T(1) / A.v[k * n + k]);  // *scal by the reciprocal, as LAPACK
        k += 1;
      } else {
        const int kp = -piv.v[k] - 1;
        if (kp != k + 1 && kp >= 0 && kp < n && k + 1 < n) {
          const T t = B.v[o + k + 1]; B.v[o + k + 1] = B.v[o + kp]; B.v[o + kp] = t;
        }
        if (k + 1 >= n) break;  // malformed pivots: stay in bounds
        const T b0 = B.v[o + k], b1 = B.v[o + k + 1];
        for (int i = k + 2; i < n; ++i)  // two rank-1 updates (*ger), in LAPACK's order
          B.v[o + i] = B.v[o + i] - A.v[k * n + i] * b0 - A.v[(k + 1) * n + i] * b1;
        const T akm1k = A.v[k * n + k + 1];
        const T akm1 = A.v[k * n + k] / akm1k;
        const T ak = A.v[(k + 1) * n + k + 1] / akm1k;
        const T denom = akm1 * ak - T(1);
        const T bkm1 = b0 / akm1k;
        const T bkk = b1 / akm1k;
        B.v[o + k] = (ak * bkm1 - bkk) / denom;
        B.v[o + k + 1] = (akm1 * bkk - bkm1) / denom;
        k += 2;
      }
    }
    // Solve L^T P^T x = y, last to first.
    k = n - 1;
    while (k >= 0) {
      if (piv.v[k] > 0) {
        T dot = T(0);  // *gemv: the dot product first, then one subtraction
        for (int i = k + 1; i < n; ++i) dot += B.v[o + i] * A.v[k * n + i];
        B.v[o + k] -= dot;
        const int kp = piv.v[k] - 1;
        if (kp != k && kp >= 0 && kp < n) {
          const T t = B.v[o + k]; B.v[o + k] = B.v[o + kp]; B.v[o + kp] = t;
        }
        k -= 1;
      } else {
        if (k < 1) break;  // malformed pivots: stay in bounds
        T dot = T(0), dot1 = T(0);
        for (int i = k + 1; i < n; ++i) {
          dot += B.v[o + i] * A.v[k * n + i];
          dot1 += B.v[o + i] * A.v[(k - 1) * n + i];
        }
        B.v[o + k] -= dot;
        B.v[o + k - 1] -= dot1;
        const int kp = -piv.v[k] - 1;
        if (kp != k && kp >= 0 && kp < n) {
          const T t = B.v[o + k]; B.v[o + k] = B.v[o + kp]; B.v[o + kp] = t;
        }
        k -= 2;
      }
    }
  }
}
#endif
