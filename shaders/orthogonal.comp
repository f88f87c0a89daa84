#version 460
// Orthogonal factorizations, one workgroup per matrix of a batch (grid-stride over matrices):
//   OP 0  symmetric eigendecomposition (cyclic two-sided Jacobi)          linalg.eigh
//   OP 1  singular value decomposition (one-sided Jacobi, Hestenes)       linalg.svd
//   OP 2  Householder QR, LAPACK geqrf's reflectors and signs              geqrf, linalg.qr
//   OP 3  applying geqrf's reflectors: Q C, Q^T C, C Q, C Q^T (or Q itself) orgqr, ormqr
// KIND 0: float32 operands and math, KIND 3: float64 (devices with shaderFloat64 only).
//
// Portable baseline: the working matrices live in device memory (the `work` buffer, one slice
// per matrix), the invocations of a workgroup split each step and meet at barriers. Every
// sweep visits all n (n - 1) / 2 index pairs in n - 1 steps of n / 2 disjoint pairs
// (round-robin "chess tournament" order), whose rotations commute and are applied at once.
// Sweeps stop when a whole sweep rotates nothing, or after the launcher's sweep cap (so NaN /
// Inf input ends, with NaN results). A real-GPU version for large n would keep tiles in shared memory
// and rotate blocks of columns (block Jacobi on tiles, or Householder tridiagonalization /
// bidiagonalization with a blocked, GEMM-rich reduction); this one is for small and batched
// matrices.
//
// Built per (op, kind) by tools/build_shaders.py (orthogonal.variants.toml).
// ABI (mirrored by OrthogonalPush in src/kernels/orthogonal.cpp): element strides, all offsets
// < 2^31 (checked by the launcher).
//   OP 0: in (batch, n, n) read from the lower (flags bit 1 clear) or upper triangle only;
//         vals (batch, n) ascending; vec1 (batch, n, n) eigenvectors as columns (flags bit 0).
//         work per matrix: A n*n | V n*n | rotations 2*pairs | ranks n | converged, abs_tol,
//         rotated-this-sweep.
//   OP 1: in (batch, m, n) with m >= n (the launcher passes A^T for wide matrices);
//         vals (batch, n) descending; vec1 = U (batch, m, full ? m : n), vec2 = V (batch, n, n),
//         A = U diag(vals) V^T (flags bit 0: vectors, bit 1: full U).
//         work per matrix: W n*m (columns contiguous) | V n*n | rotations 2*pairs | sigma n |
//         ranks n | scratch m | converged, rotated-this-sweep.
//   OP 2: vec1 = A (batch, m, n), factored in place (R on and above the diagonal, the
//         reflectors' tails below); vals = tau (batch, min(m, n)).
//   OP 3: in = reflectors (batch, len, k) as geqrf leaves them, vals = tau (batch, k),
//         vec1 = C (batch, m, n) updated in place; max_sweeps = k; flags bit 0: from the left
//         (len = m, else from the right, len = n), bit 1: transposed Q, bit 2: C = identity
//         first (orgqr).
//   Specialization constant 0 = local_size_x (a power of two).
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

#if KIND == KIND_FLOAT64
#define T_EPS 2.220446049250313e-16LF
#define T_TINY 2.2250738585072014e-308LF
// |zeta| beyond which sqrt(1 + zeta^2) == |zeta| in this precision (and zeta^2 may overflow)
#define T_BIG 1.0e16LF
layout(buffer_reference, std430, buffer_reference_align = 8) coherent buffer TArr { double v[]; };
#else
#define T_EPS 1.1920928955078125e-07
#define T_TINY 1.1754943508222875e-38
#define T_BIG 1.0e8
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer TArr { float v[]; };
#endif

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
  uint64_t in_addr;    //   0
  uint64_t work_addr;  //   8
  uint64_t vals_addr;  //  16
  uint64_t vec1_addr;  //  24
  uint64_t vec2_addr;  //  32
  int batch;           //  40
  int m;               //  44 rows (OP 0: n)
  int n;               //  48 columns
  int flags;           //  52 bit 0: vectors, bit 1: upper (OP 0) / full U (OP 1)
  int max_sweeps;      //  56
  int in_sb;           //  60
  int in_rs;           //  64
  int in_cs;           //  68
  int vals_sb;         //  72
  int vals_s;          //  76
  int v1_sb;           //  80
  int v1_rs;           //  84
  int v1_cs;           //  88
  int v2_sb;           //  92
  int v2_rs;           //  96
  int v2_cs;           // 100
  int work_stride;     // 104 elements of work per matrix
} pc;                  // 108 bytes

// Long loops are split over dispatches (flags bits 3-6 select the phase), with the loop range in
// push constants that the phase does not otherwise use: OP 0 / 1 run init, then sweeps as
// dispatches of steps [in_sb, in_rs) (a converged matrix returns at once), finish, and (SVD)
// completion of U over positions [in_sb, in_rs); OP 2 factors columns [in_sb, in_rs); OP 3
// applies reflectors [v2_sb, v2_rs). One dispatch looping over everything (thousands of
// workgroup barriers) came back with most invocations' writes missing on lavapipe.
#define PHASE_MASK 120
#define PHASE_INIT 8
#define PHASE_SWEEP 16
#define PHASE_FINISH 32
#define PHASE_COMPLETE 64

const uint WG = gl_WorkGroupSize.x;
shared T red_v[gl_WorkGroupSize.x];
shared int red_i[gl_WorkGroupSize.x];
shared int s_rotated;

// Buffer and shared writes of one step are read by other invocations of the workgroup in the
// next. Every workgroup barrier of this file goes through here (the memory barriers also order
// shared loads, like the sweep's `rotated` flag, before later overwrites).
void sync() {
  memoryBarrierBuffer();
  memoryBarrierShared();
  barrier();
}

T max_nan(T a, T b) { return (isnan(b) || b > a) ? b : a; }

// Workgroup-wide sum / max / argmax (ties: the lower index); every invocation gets the result.
T wg_sum(T x) {
  uint l = gl_LocalInvocationID.x;
  red_v[l] = x;
  sync();
  for (uint h = WG / 2u; h > 0u; h >>= 1) {
    if (l < h) red_v[l] += red_v[l + h];
    sync();
  }
  T r = red_v[0];
  sync();
  return r;
}

T wg_max(T x) {
  uint l = gl_LocalInvocationID.x;
  red_v[l] = x;
  sync();
  for (uint h = WG / 2u; h > 0u; h >>= 1) {
    if (l < h) red_v[l] = max_nan(red_v[l], red_v[l + h]);
    sync();
  }
  T r = red_v[0];
  sync();
  return r;
}

void wg_argmax(inout T x, inout int i) {
  uint l = gl_LocalInvocationID.x;
  red_v[l] = x;
  red_i[l] = i;
  sync();
  for (uint h = WG / 2u; h > 0u; h >>= 1) {
    if (l < h) {
      T a = red_v[l], b = red_v[l + h];
      int ia = red_i[l], ib = red_i[l + h];
      if (b > a || (b == a && ib < ia)) {
        red_v[l] = b;
        red_i[l] = ib;
      }
    }
    sync();
  }
  x = red_v[0];
  i = red_i[0];
  sync();
}

// Pair k of step r of a round-robin over nn (even) players: player 0 stays, the others rotate.
// Over the nn - 1 steps every pair meets exactly once. Returns (p, q) with p < q.
ivec2 pair_of(int k, int r, int nn) {
  int M = nn - 1;
  int p, q;
  if (k == 0) {
    p = 0;
    q = 1 + r % M;
  } else {
    p = 1 + (r + k) % M;
    q = 1 + (r + M - k) % M;
  }
  return p < q ? ivec2(p, q) : ivec2(q, p);
}

// Jacobi rotation (c, s) that diagonalizes [[app, apq], [apq, aqq]] with
// J = [[c, s], [-s, c]] (Rutishauser's formulas: the smaller angle, |t| <= 1).
// The rotation as (c, s); (1, 0) unless `apply`. Branch-free on purpose: every invocation
// evaluates the same code and the result is selected.
void rotation(T app, T aqq, T apq, bool apply, out T c, out T s) {
  T tau = (aqq - app) / (T(2) * (apply ? apq : T(1)));
  T at = abs(tau);
  T t = at > T_BIG ? T(0.5) / at : T(1) / (at + sqrt(T(1) + tau * tau));
  t = tau < T(0) ? -t : t;
  T cc = T(1) / sqrt(T(1) + t * t);
  c = apply ? cc : T(1);
  s = apply ? t * cc : T(0);
}

// Ascending with NaN last (eigenvalues), descending with NaN first (singular values); equal
// keys keep the index order.
bool before_asc(T a, int ia, T b, int ib) {
  bool an = isnan(a), bn = isnan(b);
  if (an || bn) return an == bn ? ia < ib : bn;
  return a < b || (a == b && ia < ib);
}
bool before_desc(T a, int ia, T b, int ib) {
  bool an = isnan(a), bn = isnan(b);
  if (an || bn) return an == bn ? ia < ib : an;
  return a > b || (a == b && ia < ib);
}

#if OP == 0
// ------------------------------------------------------------------ symmetric eigen (Jacobi)
void eigh_matrix(int b) {
  const int lid = int(gl_LocalInvocationID.x);
  const int n = pc.n;
  const int nn = n + (n & 1);
  const int np = nn / 2;
  const bool vec = (pc.flags & 1) != 0;
  const bool upper = (pc.flags & 2) != 0;
  TArr IN = TArr(pc.in_addr);
  TArr W = TArr(pc.work_addr);
  const int A0 = b * pc.work_stride;  // A(i, j) = W[A0 + i * n + j]
  const int V0 = A0 + n * n;           // V(i, j) = W[V0 + i * n + j]
  const int R0 = V0 + n * n;           // rotation k: (c, s) at R0 + 2k
  const int K0 = R0 + 2 * np;          // rank of eigenvalue i
  const int F0 = K0 + n;               // [F0]: 1 once a sweep rotated nothing; [F0 + 1]: abs_tol
  const int in0 = b * pc.in_sb;
  const int phase = pc.flags & PHASE_MASK;

  if (phase == PHASE_INIT) {
  T amax = T(0);
  for (int idx = lid; idx < n * n; idx += int(WG)) {
    int i = idx / n, j = idx % n;
    bool take = upper ? i <= j : i >= j;
    T a = take ? IN.v[in0 + i * pc.in_rs + j * pc.in_cs] : IN.v[in0 + j * pc.in_rs + i * pc.in_cs];
    W.v[A0 + idx] = a;
    if (vec) W.v[V0 + idx] = i == j ? T(1) : T(0);
    amax = max_nan(amax, abs(a));
  }
  amax = wg_max(amax);
  // Off-diagonal entries below eps * max|a| are dropped (eigenvalue error <= n eps ||A||, as
  // LAPACK's normwise bound); above it, the relative test keeps small eigenvalues accurate.
  if (lid == 0) {
    W.v[F0] = T(0);
    W.v[F0 + 1] = T_EPS * amax;
  }
  return;
  }

  if (phase == PHASE_SWEEP) {
  // Uniform: every invocation reads the flag the previous dispatch left.
  if (W.v[F0] != T(0)) return;
  const T abs_tol = W.v[F0 + 1];
  {
    // Steps [in_sb, in_rs) of the current sweep; [F0 + 2] records a rotation in this sweep.
    const int r_begin = pc.in_sb, r_end = min(pc.in_rs, nn - 1);
    if (lid == 0) s_rotated = 0;
    sync();
    for (int r = r_begin; r < r_end; ++r) {
      for (int k = lid; k < np; k += int(WG)) {
        ivec2 pq = pair_of(k, r, nn);
        T c = T(1), s = T(0);
        if (pq.y < n) {
          T app = W.v[A0 + pq.x * n + pq.x];
          T aqq = W.v[A0 + pq.y * n + pq.y];
          T apq = W.v[A0 + pq.x * n + pq.y];
          T tol = max(T_EPS * sqrt(abs(app)) * sqrt(abs(aqq)), abs_tol);
          const bool apply = !(abs(apq) <= tol);
          rotation(app, aqq, apq, apply, c, s);
          if (apply) s_rotated = 1;
        }
        W.v[R0 + 2 * k] = c;
        W.v[R0 + 2 * k + 1] = s;
      }
      sync();
      // A <- A J and V <- V J: columns p and q of every row.
      for (int idx = lid; idx < np * n; idx += int(WG)) {
        int k = idx / n, i = idx % n;
        T s = W.v[R0 + 2 * k + 1];
        if (s == T(0)) continue;  // identity, and the ghost pair (q == n) of an odd n
        T c = W.v[R0 + 2 * k];
        ivec2 pq = pair_of(k, r, nn);
        int ip = A0 + i * n + pq.x, iq = A0 + i * n + pq.y;
        T x = W.v[ip], y = W.v[iq];
        W.v[ip] = c * x - s * y;
        W.v[iq] = s * x + c * y;
        if (vec) {
          ip += V0 - A0;
          iq += V0 - A0;
          x = W.v[ip];
          y = W.v[iq];
          W.v[ip] = c * x - s * y;
          W.v[iq] = s * x + c * y;
        }
      }
      sync();
      // A <- J^T A: rows p and q of every column.
      for (int idx = lid; idx < np * n; idx += int(WG)) {
        int k = idx / n, j = idx % n;
        T s = W.v[R0 + 2 * k + 1];
        if (s == T(0)) continue;  // identity, and the ghost pair (q == n) of an odd n
        T c = W.v[R0 + 2 * k];
        ivec2 pq = pair_of(k, r, nn);
        int pj = A0 + pq.x * n + j, qj = A0 + pq.y * n + j;
        T x = W.v[pj], y = W.v[qj];
        W.v[pj] = c * x - s * y;
        W.v[qj] = s * x + c * y;
      }
      sync();
    }
    if (lid == 0) {
      T any = (r_begin == 0 ? T(0) : W.v[F0 + 2]) + (s_rotated != 0 ? T(1) : T(0));
      W.v[F0 + 2] = any;
      if (r_end == nn - 1 && any == T(0)) W.v[F0] = T(1);
    }
  }
  return;
  }

  // PHASE_FINISH. Eigenvalues ascending (a stable rank sort), eigenvector columns follow.
  for (int i = lid; i < n; i += int(WG)) {
    T di = W.v[A0 + i * n + i];
    int rank = 0;
    for (int j = 0; j < n; ++j)
      if (before_asc(W.v[A0 + j * n + j], j, di, i)) ++rank;
    W.v[K0 + i] = T(rank);
    TArr(pc.vals_addr).v[b * pc.vals_sb + rank * pc.vals_s] = di;
  }
  if (!vec) return;
  sync();
  TArr OUT = TArr(pc.vec1_addr);
  for (int idx = lid; idx < n * n; idx += int(WG)) {
    int row = idx / n, i = idx % n;
    int rank = int(W.v[K0 + i]);
    OUT.v[b * pc.v1_sb + row * pc.v1_rs + rank * pc.v1_cs] = W.v[V0 + idx];
  }
}
#endif

#if OP == 1
// ------------------------------------------------------------------ SVD (one-sided Jacobi)
void svd_matrix(int b) {
  const int lid = int(gl_LocalInvocationID.x);
  const int m = pc.m, n = pc.n;
  const int nn = n + (n & 1);
  const int np = nn / 2;
  const bool vec = (pc.flags & 1) != 0;
  const bool full = (pc.flags & 2) != 0;
  TArr IN = TArr(pc.in_addr);
  TArr W = TArr(pc.work_addr);
  const int W0 = b * pc.work_stride;  // W(i, j) = W[W0 + j * m + i]: column j contiguous
  const int V0 = W0 + n * m;           // V(i, j) = W[V0 + j * n + i]
  const int R0 = V0 + n * n;           // rotation k: (c, s) at R0 + 2k
  const int S0 = R0 + 2 * np;          // norm of column j
  const int K0 = S0 + n;               // rank of column j
  const int H0 = K0 + n;               // scratch, m elements
  const int F0 = H0 + m;               // 1 once a sweep rotated nothing
  const int in0 = b * pc.in_sb;
  const int phase = pc.flags & PHASE_MASK;

  if (phase == PHASE_INIT) {
    for (int idx = lid; idx < n * m; idx += int(WG)) {
      int j = idx / m, i = idx % m;
      W.v[W0 + idx] = IN.v[in0 + i * pc.in_rs + j * pc.in_cs];
    }
    if (vec)
      for (int idx = lid; idx < n * n; idx += int(WG)) W.v[V0 + idx] = (idx / n == idx % n) ? T(1) : T(0);
    if (lid == 0) W.v[F0] = T(0);
    return;
  }

  if (phase == PHASE_SWEEP) {
  if (W.v[F0] != T(0)) return;  // uniform, see eigh
  {
    // Steps [in_sb, in_rs) of the current sweep; [F0 + 1] records a rotation in this sweep.
    const int r_begin = pc.in_sb, r_end = min(pc.in_rs, nn - 1);
    if (lid == 0) s_rotated = 0;
    sync();
    for (int r = r_begin; r < r_end; ++r) {
      // One invocation per pair forms the 2x2 Gram matrix of columns p, q (a real-GPU
      // version would split these dot products over a subgroup).
      for (int k = lid; k < np; k += int(WG)) {
        ivec2 pq = pair_of(k, r, nn);
        T c = T(1), s = T(0);
        if (pq.y < n) {
          T alpha = T(0), beta = T(0), gamma = T(0);
          int cp = W0 + pq.x * m, cq = W0 + pq.y * m;
          for (int i = 0; i < m; ++i) {
            T x = W.v[cp + i], y = W.v[cq + i];
            alpha += x * x;
            beta += y * y;
            gamma += x * y;
          }
          // Columns orthogonal to working precision (relative test: small singular values
          // keep their accuracy) are left alone.
          T tol = max(T_EPS * sqrt(alpha) * sqrt(beta), T_TINY);
          const bool apply = !(abs(gamma) <= tol);
          rotation(alpha, beta, gamma, apply, c, s);
          if (apply) s_rotated = 1;
        }
        W.v[R0 + 2 * k] = c;
        W.v[R0 + 2 * k + 1] = s;
      }
      sync();
      // W <- W J and V <- V J (columns p and q).
      for (int idx = lid; idx < np * m; idx += int(WG)) {
        int k = idx / m, i = idx % m;
        T s = W.v[R0 + 2 * k + 1];
        if (s == T(0)) continue;  // identity, and the ghost pair (q == n) of an odd n
        T c = W.v[R0 + 2 * k];
        ivec2 pq = pair_of(k, r, nn);
        int ip = W0 + pq.x * m + i, iq = W0 + pq.y * m + i;
        T x = W.v[ip], y = W.v[iq];
        W.v[ip] = c * x - s * y;
        W.v[iq] = s * x + c * y;
      }
      if (vec)
        for (int idx = lid; idx < np * n; idx += int(WG)) {
          int k = idx / n, i = idx % n;
          T s = W.v[R0 + 2 * k + 1];
          if (s == T(0)) continue;
          T c = W.v[R0 + 2 * k];
          ivec2 pq = pair_of(k, r, nn);
          int ip = V0 + pq.x * n + i, iq = V0 + pq.y * n + i;
          T x = W.v[ip], y = W.v[iq];
          W.v[ip] = c * x - s * y;
          W.v[iq] = s * x + c * y;
        }
      sync();
    }
    if (lid == 0) {
      T any = (r_begin == 0 ? T(0) : W.v[F0 + 1]) + (s_rotated != 0 ? T(1) : T(0));
      W.v[F0 + 1] = any;
      if (r_end == nn - 1 && any == T(0)) W.v[F0] = T(1);
    }
  }
  return;
  }

  TArr U = TArr(pc.vec1_addr);
  const int u0 = b * pc.v1_sb;
  if (phase == PHASE_FINISH) {
  // Singular values = column norms, sorted descending.
  for (int j = lid; j < n; j += int(WG)) {
    T acc = T(0);
    for (int i = 0; i < m; ++i) {
      T x = W.v[W0 + j * m + i];
      acc += x * x;
    }
    W.v[S0 + j] = sqrt(acc);
  }
  sync();
  for (int j = lid; j < n; j += int(WG)) {
    T sj = W.v[S0 + j];
    int rank = 0;
    for (int i = 0; i < n; ++i)
      if (before_desc(W.v[S0 + i], i, sj, j)) ++rank;
    W.v[K0 + j] = T(rank);
    TArr(pc.vals_addr).v[b * pc.vals_sb + rank * pc.vals_s] = sj;
  }
  if (!vec) return;
  sync();

  TArr VO = TArr(pc.vec2_addr);
  // Columns with a (numerically) zero norm carry no direction: their U columns, and the extra
  // ones of a full U, are completed by PHASE_COMPLETE. They rank last (positions nz..).
  for (int idx = lid; idx < n * m; idx += int(WG)) {
    int j = idx / m, i = idx % m;
    T sj = W.v[S0 + j];
    if (sj < T_TINY) continue;
    int rank = int(W.v[K0 + j]);
    U.v[u0 + i * pc.v1_rs + rank * pc.v1_cs] = W.v[W0 + idx] / sj;
  }
  for (int idx = lid; idx < n * n; idx += int(WG)) {
    int j = idx / n, i = idx % n;
    int rank = int(W.v[K0 + j]);
    VO.v[b * pc.v2_sb + i * pc.v2_rs + rank * pc.v2_cs] = W.v[V0 + idx];
  }
  return;
  }

  // PHASE_COMPLETE, positions [in_sb, in_rs).
  int nz = 0;
  for (int j = 0; j < n; ++j)
    if (!(W.v[S0 + j] < T_TINY)) ++nz;
  // Completion to an orthonormal set of `ucols` columns: the next column is the unit vector
  // e_k farthest from the span so far (residual 1 - sum_j U(k, j)^2 >= (m - pos) / m),
  // projected out twice (classical Gram-Schmidt with reorthogonalization), normalized.
  const int ucols = full ? m : n;
  for (int pos = max(nz, pc.in_sb); pos < min(ucols, pc.in_rs); ++pos) {
    T best = T(-1);
    int bk = 0;
    for (int k = lid; k < m; k += int(WG)) {
      T acc = T(0);
      for (int j = 0; j < pos; ++j) {
        T u = U.v[u0 + k * pc.v1_rs + j * pc.v1_cs];
        acc += u * u;
      }
      T res = T(1) - acc;
      if (res > best) {
        best = res;
        bk = k;
      }
    }
    wg_argmax(best, bk);
    for (int i = lid; i < m; i += int(WG)) {
      T acc = i == bk ? T(1) : T(0);
      for (int j = 0; j < pos; ++j)
        acc -= U.v[u0 + i * pc.v1_rs + j * pc.v1_cs] * U.v[u0 + bk * pc.v1_rs + j * pc.v1_cs];
      U.v[u0 + i * pc.v1_rs + pos * pc.v1_cs] = acc;
    }
    sync();
    for (int j = lid; j < pos; j += int(WG)) {
      T h = T(0);
      for (int i = 0; i < m; ++i)
        h += U.v[u0 + i * pc.v1_rs + j * pc.v1_cs] * U.v[u0 + i * pc.v1_rs + pos * pc.v1_cs];
      W.v[H0 + j] = h;
    }
    sync();
    T part = T(0);
    for (int i = lid; i < m; i += int(WG)) {
      int at = u0 + i * pc.v1_rs + pos * pc.v1_cs;
      T acc = U.v[at];
      for (int j = 0; j < pos; ++j) acc -= U.v[u0 + i * pc.v1_rs + j * pc.v1_cs] * W.v[H0 + j];
      U.v[at] = acc;
      part += acc * acc;
    }
    T inv = T(1) / sqrt(wg_sum(part));
    for (int i = lid; i < m; i += int(WG)) U.v[u0 + i * pc.v1_rs + pos * pc.v1_cs] *= inv;
    sync();
  }
}
#endif

#if OP == 2
// ------------------------------------------------------------------ Householder QR (geqrf)
// Column j: beta = -sign(alpha) * |(alpha, x)|, tau = (beta - alpha) / beta,
// v = (1, x / (alpha - beta)) (LAPACK dlarfg, so R's diagonal signs equal LAPACK's), then
// A[j:, j+1:] -= tau v (v^T A[j:, j+1:]), one invocation per trailing column. A real-GPU
// version would block the reflectors (compact WY, larft / larfb) so the trailing update is a
// GEMM.
void geqrf_matrix(int b) {
  const int lid = int(gl_LocalInvocationID.x);
  const int m = pc.m, n = pc.n, k = min(m, n);
  TArr A = TArr(pc.vec1_addr);
  TArr TAU = TArr(pc.vals_addr);
  const int a0 = b * pc.v1_sb, rs = pc.v1_rs, cs = pc.v1_cs;
  for (int j = pc.in_sb; j < min(k, pc.in_rs); ++j) {
    // ||A[j+1:, j]|| scaled by its largest entry (no overflow / underflow, as dnrm2)
    T part = T(0);
    for (int i = j + 1 + lid; i < m; i += int(WG)) part = max_nan(part, abs(A.v[a0 + i * rs + j * cs]));
    const T amax = wg_max(part);
    part = T(0);
    if (amax > T(0))
      for (int i = j + 1 + lid; i < m; i += int(WG)) {
        T x = A.v[a0 + i * rs + j * cs] / amax;
        part += x * x;
      }
    const T ssq = wg_sum(part);
    const T xnorm = amax > T(0) ? amax * sqrt(ssq) : (isnan(amax) ? amax : T(0));
    const T alpha = A.v[a0 + j * rs + j * cs];
    T tau = T(0), beta = alpha, scale = T(1);
    if (xnorm != T(0)) {
      T big = max(abs(alpha), xnorm), small = min(abs(alpha), xnorm);
      T r = small / big;
      T nrm = big * sqrt(T(1) + r * r);
      beta = alpha >= T(0) ? -nrm : nrm;
      tau = (beta - alpha) / beta;
      scale = T(1) / (alpha - beta);
    }
    sync();  // every invocation has read alpha
    if (tau != T(0))
      for (int i = j + 1 + lid; i < m; i += int(WG)) A.v[a0 + i * rs + j * cs] *= scale;
    if (lid == 0) {
      A.v[a0 + j * rs + j * cs] = beta;
      TAU.v[b * pc.vals_sb + j * pc.vals_s] = tau;
    }
    sync();
    if (tau != T(0)) {
      for (int c = j + 1 + lid; c < n; c += int(WG)) {
        T w = A.v[a0 + j * rs + c * cs];
        for (int i = j + 1; i < m; ++i) w += A.v[a0 + i * rs + j * cs] * A.v[a0 + i * rs + c * cs];
        w *= tau;
        A.v[a0 + j * rs + c * cs] -= w;
        for (int i = j + 1; i < m; ++i) A.v[a0 + i * rs + c * cs] -= A.v[a0 + i * rs + j * cs] * w;
      }
      sync();
    }
  }
}
#endif

#if OP == 3
// ------------------------------------------------------------------ applying reflectors
// Q = H_0 H_1 ... H_{k-1}, H_j = I - tau_j v_j v_j^T (v_j = (0.., 1, R[j+1:, j])). Q C applies
// H_{k-1} first, Q^T C H_0 first; C Q applies H_0 first, C Q^T H_{k-1} first. One invocation
// per column (left) or row (right) of C.
void apply_matrix(int b) {
  const int lid = int(gl_LocalInvocationID.x);
  const int m = pc.m, n = pc.n, k = pc.max_sweeps;
  const bool left = (pc.flags & 1) != 0, trans = (pc.flags & 2) != 0, init = (pc.flags & 4) != 0;
  TArr R = TArr(pc.in_addr);
  TArr TAU = TArr(pc.vals_addr);
  TArr C = TArr(pc.vec1_addr);
  const int r0 = b * pc.in_sb, c0 = b * pc.v1_sb, crs = pc.v1_rs, ccs = pc.v1_cs;
  if (init && pc.v2_sb == 0) {
    for (int idx = lid; idx < m * n; idx += int(WG)) {
      int i = idx / n, c = idx % n;
      C.v[c0 + i * crs + c * ccs] = i == c ? T(1) : T(0);
    }
    sync();
  }
  const bool forward = left == trans;
  for (int s = pc.v2_sb; s < min(k, pc.v2_rs); ++s) {
    const int j = forward ? s : k - 1 - s;
    const T tau = TAU.v[b * pc.vals_sb + j * pc.vals_s];
    if (tau == T(0)) continue;
    if (left) {
      for (int c = lid; c < n; c += int(WG)) {
        T w = C.v[c0 + j * crs + c * ccs];
        for (int i = j + 1; i < m; ++i) w += R.v[r0 + i * pc.in_rs + j * pc.in_cs] * C.v[c0 + i * crs + c * ccs];
        w *= tau;
        C.v[c0 + j * crs + c * ccs] -= w;
        for (int i = j + 1; i < m; ++i) C.v[c0 + i * crs + c * ccs] -= R.v[r0 + i * pc.in_rs + j * pc.in_cs] * w;
      }
    } else {
      for (int r = lid; r < m; r += int(WG)) {
        T w = C.v[c0 + r * crs + j * ccs];
        for (int i = j + 1; i < n; ++i) w += C.v[c0 + r * crs + i * ccs] * R.v[r0 + i * pc.in_rs + j * pc.in_cs];
        w *= tau;
        C.v[c0 + r * crs + j * ccs] -= w;
        for (int i = j + 1; i < n; ++i) C.v[c0 + r * crs + i * ccs] -= w * R.v[r0 + i * pc.in_rs + j * pc.in_cs];
      }
    }
    sync();
  }
}
#endif

void main() {
  for (int b = int(gl_WorkGroupID.x); b < pc.batch; b += int(gl_NumWorkGroups.x)) {
#if OP == 0
    eigh_matrix(b);
#elif OP == 1
    svd_matrix(b);
#elif OP == 2
    geqrf_matrix(b);
#else
    apply_matrix(b);
#endif
    sync();  // the shared state is reused by the next matrix
  }
}
