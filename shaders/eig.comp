#version 460
// General (non-symmetric) real eigendecomposition, LAPACK geev's algorithm and conventions,
// one workgroup per matrix of a batch (grid-stride over matrices):
//   1. balancing (gebal 'B': permutations that isolate eigenvalues, then diagonal scaling by
//      powers of 2 that equalizes row and column norms),
//   2. reduction to upper Hessenberg form by Householder reflectors (gehd2) and, for the
//      eigenvectors, their product Z (orghr),
//   3. the Francis double-shift QR iteration to real Schur form (lahqr: Ahues-Kressner
//      deflation test, exceptional shifts every 10 iterations without deflation, 2x2 blocks
//      standardized as lanv2 does, so complex pairs come out as (a + ib, a - ib), b > 0),
//   4. eigenvectors of the quasi-triangular Schur form T by back-substitution (trevc: the
//      1x1 / 2x2 block solves perturb a singular pivot to smin and rescale against
//      overflow, so defective matrices give finite, nearly parallel vectors as LAPACK does),
//      back-transformed by Z and by the balancing (gebak),
//   5. geev's normalization: every vector has Euclidean norm 1; a complex vector is rotated
//      so that its component of largest modulus is real (LAPACK's dlartg sign rule).
// Eigenvalues come in the order of the Schur form's diagonal, as LAPACK's. A real eigenvalue
// has an imaginary part of exactly 0; eigenvector j + 1 of a pair is the conjugate of j.
//
// KIND 0: float32 operands and math, KIND 3: float64 (devices with shaderFloat64 only). The
// constants (eps = LAPACK's 'Precision', safe minimum) are those of the precision, as sgeev /
// dgeev use.
//
// Portable baseline. The working matrices live in device memory (`work`, one slice per
// matrix). Control decisions (balancing's isolation tests and scalings, the QR iteration's
// deflations, shifts and where a sweep starts) are made by every invocation from the same
// values, read after a barrier, so control flow stays uniform; the invocations split each row
// / column update and meet at barriers. Every phase is its own dispatch and the long ones are
// split over dispatches, so that no invocation runs more than ~32k loop iterations (all loops
// together) in one dispatch: lavapipe's shader compiler (gallivm) ends every loop after its
// current pass once an invocation has run 65535 loop iterations (its infinite-loop guard),
// which silently truncates longer work. Fixed-size work comes in ranges [begin, end) chosen by
// the launcher (Hessenberg columns, reflectors of Z, eigenvectors, output columns); balancing
// and the QR iteration run until their work budget `end - begin` is spent, their progress kept
// in `state`, and return at once when done. A real-GPU version for large n would use a blocked
// Hessenberg reduction (GEMM-rich), multishift QR with aggressive early deflation (LAPACK's
// laqr0) and blocked back-transformation; this one is for small and batched matrices.
//
// Built per kind by tools/build_shaders.py (eig.variants.toml).
// ABI (mirrored by EigPush in src/kernels/eig.cpp): element strides, every offset < 2^31.
//   in:    (batch, n, n) real matrices, element (b, i, j) at b * in_sb + i * in_rs + j * in_cs.
//   state: int32 (batch, 16): [0] info (0; k > 0: the QR iteration did not converge, LAPACK's
//          info = the 1-based row it was working on; -1: the input has an Inf or NaN, nothing
//          computed), [1] ilo, [2] ihi (balancing), [3] i, [4] l, [5] iterations without
//          deflation, [6] iterations for the current i, [7] 1 once the QR iteration ended,
//          [8..14] balancing's progress (stage, cursor, k, l, moved, scan end, pass).
//   vals:  (batch, n) complex (interleaved re, im) at b * vals_sb + j * vals_s (real-view
//          element strides; im at + 1). Non-finite input: NaN.
//   vecs:  (batch, n, n) complex, eigenvectors as columns, (b, i, j) at b * vec_sb + i * vec_rs
//          + j * vec_cs (real-view strides). Written only for info == 0.
//   work:  per matrix (work_stride elements): H n*n | Z n*n | X n*n | V n*n (column-major)
//          | balancing scale n | tau n | wr n | wi n | column norms n.
//   flags bit 0: eigenvectors (else the QR iteration transforms only the active block, as
//          LAPACK's eigenvalue-only path, and phases 4-5 are skipped); bit 1: the last
//          balancing dispatch (balancing that has not finished stops there: any prefix of its
//          steps is a similarity, only LAPACK's exact scaling is lost).
//   itmax: iterations allowed per eigenvalue (0: LAPACK's 30 * max(10, ihi - ilo + 1)).
//   Specialization constant 0 = local_size_x (a power of two).
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"

#if KIND == KIND_FLOAT64
#define T_EPS 2.220446049250313e-16LF
#define T_SAFMIN 2.2250738585072014e-308LF
#define CT dvec2
// 2^int(log2(safmin / eps) / 2), lanv2's rescaling bound
#define T_SAFMN2_EXP (-485)
layout(buffer_reference, std430, buffer_reference_align = 8) coherent buffer TArr { double v[]; };
bool is_finite(double x) { return (unpackDouble2x32(x).y & 0x7ff00000u) != 0x7ff00000u; }
#else
#define T_EPS 1.1920928955078125e-07
#define T_SAFMIN 1.1754943508222875e-38
#define CT vec2
#define T_SAFMN2_EXP (-51)
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer TArr { float v[]; };
bool is_finite(float x) { return (floatBitsToUint(x) & 0x7f800000u) != 0x7f800000u; }
#endif
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer IArr { int v[]; };

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
  uint64_t in_addr;     //   0
  uint64_t work_addr;   //   8
  uint64_t state_addr;  //  16
  uint64_t vals_addr;   //  24
  uint64_t vecs_addr;   //  32
  int batch;            //  40
  int n;                //  44
  int phase;            //  48
  int flags;            //  52
  int begin;            //  56
  int end;              //  60
  int in_sb;            //  64
  int in_rs;            //  68
  int in_cs;            //  72
  int vals_sb;          //  76
  int vals_s;           //  80
  int vec_sb;           //  84
  int vec_rs;           //  88
  int vec_cs;           //  92
  int work_stride;      //  96
  int itmax;            // 100
} pc;                   // 104 bytes

#define PHASE_INIT 0
#define PHASE_HESSENBERG 1
#define PHASE_FORM_Z 2
#define PHASE_QR 3
#define PHASE_VECTORS 4
#define PHASE_BACK 5
#define PHASE_OUTPUT 6
#define PHASE_BALANCE 7
#define PHASE_CLEAR 8
#define PHASE_COLUMN_NORMS 9

#define ST_INFO 0
#define ST_ILO 1
#define ST_IHI 2
#define ST_I 3
#define ST_L 4
#define ST_KDEFL 5
#define ST_ITS 6
#define ST_DONE 7
#define ST_BSTAGE 8   // balancing: 0 rows, 1 columns, 2 scaling, 3 done
#define ST_BCUR 9     // the row / column / index being examined
#define ST_BK 10
#define ST_BL 11
#define ST_BMOVED 12  // a permutation or scaling in the current scan
#define ST_BEND 13    // end of the current column scan
#define ST_BPASS 14   // scaling passes done
#define STATE_INTS 16

const uint WG = gl_WorkGroupSize.x;
shared T red_v[gl_WorkGroupSize.x];
shared T red_w[gl_WorkGroupSize.x];
shared int s_flag;

// Every workgroup barrier of this file goes through here: buffer and shared writes of one step
// are read by other invocations in the next.
void sync() {
  memoryBarrierBuffer();
  memoryBarrierShared();
  barrier();
}

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
    if (l < h) red_v[l] = max(red_v[l], red_v[l + h]);
    sync();
  }
  T r = red_v[0];
  sync();
  return r;
}

// Two reductions at once (balancing's row and column statistics).
void wg_max2(inout T x, inout T y) {
  uint l = gl_LocalInvocationID.x;
  red_v[l] = x;
  red_w[l] = y;
  sync();
  for (uint h = WG / 2u; h > 0u; h >>= 1) {
    if (l < h) {
      red_v[l] = max(red_v[l], red_v[l + h]);
      red_w[l] = max(red_w[l], red_w[l + h]);
    }
    sync();
  }
  x = red_v[0];
  y = red_w[0];
  sync();
}
void wg_sum2(inout T x, inout T y) {
  uint l = gl_LocalInvocationID.x;
  red_v[l] = x;
  red_w[l] = y;
  sync();
  for (uint h = WG / 2u; h > 0u; h >>= 1) {
    if (l < h) {
      red_v[l] += red_v[l + h];
      red_w[l] += red_w[l + h];
    }
    sync();
  }
  x = red_v[0];
  y = red_w[0];
  sync();
}

// Whether any invocation passes true.
bool wg_any(bool x) {
  if (gl_LocalInvocationID.x == 0u) s_flag = 0;
  sync();
  if (x) atomicOr(s_flag, 1);
  sync();
  const bool r = s_flag != 0;
  sync();
  return r;
}

// ---------------------------------------------------------------- the current matrix
TArr W;
IArr S;
int N, LID;
int H0, Z0, X0, V0, SC0, TAU0, WR0, WI0, CN0, S0;

T h(int i, int j) { return W.v[H0 + j * N + i]; }
void set_h(int i, int j, T x) { W.v[H0 + j * N + i] = x; }

void select_matrix(int b) {
  N = pc.n;
  LID = int(gl_LocalInvocationID.x);
  W = TArr(pc.work_addr);
  S = IArr(pc.state_addr);
  H0 = b * pc.work_stride;
  Z0 = H0 + N * N;
  X0 = Z0 + N * N;
  V0 = X0 + N * N;
  SC0 = V0 + N * N;
  TAU0 = SC0 + N;
  WR0 = TAU0 + N;
  WI0 = WR0 + N;
  CN0 = WI0 + N;
  S0 = b * STATE_INTS;
}

// Fortran's SIGN(a, b): |a| with the sign of b (b = -0 counts as positive).
T sign_of(T a, T b) { return b >= T(0) ? abs(a) : -abs(a); }

// sqrt(x^2 + y^2) without overflow or needless underflow (LAPACK's lapy2).
T hypot2(T x, T y) {
  T a = abs(x), b = abs(y);
  T w = max(a, b), z = min(a, b);
  if (z == T(0) || w == T(0)) return w;
  T r = z / w;
  return w * sqrt(T(1) + r * r);
}

// Complex arithmetic on (re, im) pairs; the division is Smith's (no overflow for moderate
// quotients).
CT cmul(CT a, CT b) { return CT(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
CT cdiv(CT a, CT b) {
  if (abs(b.y) <= abs(b.x)) {
    T e = b.y / b.x, f = b.x + b.y * e;
    return CT((a.x + a.y * e) / f, (a.y - a.x * e) / f);
  }
  T e = b.x / b.y, f = b.y + b.x * e;
  return CT((a.x * e + a.y) / f, (a.y * e - a.x) / f);
}
T cabs1(CT a) { return abs(a.x) + abs(a.y); }

// ---------------------------------------------------------------- 1. load and balance
void phase_init(int b) {
  TArr IN = TArr(pc.in_addr);
  const int in0 = b * pc.in_sb;
  bool finite = true;
  for (int idx = LID; idx < N * N; idx += int(WG)) {
    int i = idx % N, j = idx / N;
    T a = IN.v[in0 + i * pc.in_rs + j * pc.in_cs];
    W.v[H0 + idx] = a;
    finite = finite && is_finite(a);
  }
  const bool bad = wg_any(!finite);
  if (LID == 0) {
    for (int t = 0; t < STATE_INTS; ++t) S.v[S0 + t] = 0;
    S.v[S0 + ST_BL] = N - 1;
    S.v[S0 + ST_BCUR] = N - 1;
    S.v[S0 + ST_IHI] = N - 1;
    if (bad) {
      S.v[S0 + ST_INFO] = -1;
      S.v[S0 + ST_DONE] = 1;
      S.v[S0 + ST_BSTAGE] = 3;
    }
  }
}

// Exchanges rows and columns p and q of the active part as gebal does: columns over rows
// 0..l, then rows over columns k..n-1 (two parallel passes).
void exchange(int p, int q, int k, int l) {
  for (int r = LID; r <= l; r += int(WG)) {
    T t = h(r, p);
    set_h(r, p, h(r, q));
    set_h(r, q, t);
  }
  sync();
  for (int c = k + LID; c < N; c += int(WG)) {
    T t = h(p, c);
    set_h(p, c, h(q, c));
    set_h(q, c, t);
  }
  sync();
}

// Ends balancing with the active window [k, l]: ilo / ihi, the eigenvalues outside it, and
// the QR iteration's start.
void finish_balance(int k, int l, bool init_scale) {
  for (int i = LID; i < N; i += int(WG)) {
    if (init_scale && i >= k && i <= l) W.v[SC0 + i] = T(1);
    W.v[WR0 + i] = h(i, i);
    W.v[WI0 + i] = T(0);
  }
  if (LID == 0) {
    S.v[S0 + ST_ILO] = k;
    S.v[S0 + ST_IHI] = l;
    S.v[S0 + ST_I] = l;
    S.v[S0 + ST_L] = k;
    S.v[S0 + ST_BSTAGE] = 3;
  }
}

// gebal 'B', step by step, until the dispatch's work budget is spent. Stage 0: rows with no
// off-diagonal entry in columns 0..l isolate an eigenvalue and move to the bottom (a scan goes
// from row l down, continuing below a moved row, and repeats while it moved one: LAPACK
// 3.12's order). Stage 1: columns with no off-diagonal entry in rows k..l move to the left.
// Stage 2: passes over i = k..l scaling row / column i by a power of 2 that brings their norms
// (over the active part) together, until a pass changes nothing. The scale array ends as
// LAPACK's SCALE: for i < ilo or i > ihi the index exchanged with i, else the factor.
void phase_balance() {
  if (S.v[S0 + ST_BSTAGE] == 3) return;  // uniform: done (or non-finite input)
  int stage = S.v[S0 + ST_BSTAGE], cur = S.v[S0 + ST_BCUR];
  int k = S.v[S0 + ST_BK], l = S.v[S0 + ST_BL];
  bool moved = S.v[S0 + ST_BMOVED] != 0;
  int scan_end = S.v[S0 + ST_BEND], pass = S.v[S0 + ST_BPASS];
  sync();  // everyone has read the state (lid 0 rewrites it at the end)
  const int q = (N + int(WG) - 1) / int(WG);
  const int unit = 8 * q + 4 * findMSB(WG) + 24;  // loop iterations of one step, bounded
  const int budget = pc.end - pc.begin;
  const T sfmin1 = T_SAFMIN / T_EPS, sfmax1 = T(1) / sfmin1;
  const T sfmin2 = sfmin1 * T(2), sfmax2 = T(1) / sfmin2;
  for (int work = 0; stage != 3 && work + unit <= budget; work += unit) {
    if (stage == 0) {
      const int i = cur;
      bool nz = false;
      for (int j = LID; j <= l; j += int(WG)) nz = nz || (j != i && h(i, j) != T(0));
      if (!wg_any(nz)) {
        if (LID == 0) W.v[SC0 + l] = T(i);
        if (i != l) exchange(i, l, k, l);
        moved = true;
        if (l == 0) {
          finish_balance(0, 0, false);
          stage = 3;
          break;
        }
        --l;
      }
      cur = i - 1;
      if (cur < 0) {
        if (moved) {
          cur = l;
        } else {
          stage = 1;
          cur = k;
          scan_end = l;
        }
        moved = false;
      }
    } else if (stage == 1) {
      const int j = cur;
      bool nz = false;
      for (int i = k + LID; i <= l; i += int(WG)) nz = nz || (i != j && h(i, j) != T(0));
      if (!wg_any(nz)) {
        if (LID == 0) W.v[SC0 + k] = T(j);
        if (j != k) exchange(j, k, k, l);
        moved = true;
        ++k;
      }
      cur = j + 1;
      if (cur > scan_end) {
        if (moved) {
          cur = k;
          scan_end = l;
        } else {
          for (int i = k + LID; i <= l; i += int(WG)) W.v[SC0 + i] = T(1);
          stage = 2;
          cur = k;
          pass = 0;
        }
        moved = false;
      }
    } else {
      const int i = cur;
      // Largest entries of column i (rows 0..l) and row i (columns k..n-1), then the norms
      // of both over the active part, scaled by those (no overflow / underflow).
      T ca = T(0), ra = T(0);
      for (int r = LID; r <= l; r += int(WG)) ca = max(ca, abs(h(r, i)));
      for (int c2 = k + LID; c2 < N; c2 += int(WG)) ra = max(ra, abs(h(i, c2)));
      wg_max2(ca, ra);
      T cs = T(0), rs = T(0);
      for (int t = k + LID; t <= l; t += int(WG)) {
        if (ca > T(0)) {
          const T x = h(t, i) / ca;
          cs += x * x;
        }
        if (ra > T(0)) {
          const T y = h(i, t) / ra;
          rs += y * y;
        }
      }
      wg_sum2(cs, rs);
      T c = ca > T(0) ? ca * sqrt(cs) : T(0);
      T r = ra > T(0) ? ra * sqrt(rs) : T(0);
      T f = T(1);
      bool apply = false;
      if (c != T(0) && r != T(0)) {
        T g = r / T(2);
        const T s = c + r;
        while (c < g && max(f, max(c, ca)) < sfmax2 && min(r, min(g, ra)) > sfmin2) {
          f *= T(2);
          c *= T(2);
          ca *= T(2);
          r /= T(2);
          g /= T(2);
          ra /= T(2);
        }
        g = c / T(2);
        while (g >= r && max(r, ra) < sfmax2 && min(min(f, c), min(g, ca)) > sfmin2) {
          f /= T(2);
          c /= T(2);
          g /= T(2);
          ca /= T(2);
          r *= T(2);
          ra *= T(2);
        }
        const T si = W.v[SC0 + i];
        apply = c + r < T(0.95) * s;
        if (apply && f < T(1) && si < T(1) && f * si <= sfmin1) apply = false;
        if (apply && f > T(1) && si > T(1) && si >= sfmax1 / f) apply = false;
        sync();  // every invocation has read scale[i]
        if (apply) {
          if (LID == 0) W.v[SC0 + i] = si * f;
          for (int c2 = k + LID; c2 < N; c2 += int(WG)) set_h(i, c2, h(i, c2) / f);
          sync();
          for (int r2 = LID; r2 <= l; r2 += int(WG)) set_h(r2, i, h(r2, i) * f);
          sync();
          moved = true;
        }
      }
      cur = i + 1;
      if (cur > l) {
        ++pass;
        if (!moved || pass >= 100) {
          finish_balance(k, l, false);
          stage = 3;
          break;
        }
        cur = k;
        moved = false;
      }
    }
  }
  if (stage != 3 && (pc.flags & 2) != 0) {
    // The last balancing dispatch: stop here (the steps done so far are a similarity).
    finish_balance(k, l, stage < 2);
    stage = 3;
  }
  sync();
  if (LID == 0 && stage != 3) {
    S.v[S0 + ST_BSTAGE] = stage;
    S.v[S0 + ST_BCUR] = cur;
    S.v[S0 + ST_BK] = k;
    S.v[S0 + ST_BL] = l;
    S.v[S0 + ST_BMOVED] = moved ? 1 : 0;
    S.v[S0 + ST_BEND] = scan_end;
    S.v[S0 + ST_BPASS] = pass;
  }
}

// ---------------------------------------------------------------- 2. Hessenberg form
// Column c: the reflector I - tau v v^T (v = (1, H[c+2:ihi+1, c] / (alpha - beta))) maps
// H[c+1:ihi+1, c] to (beta, 0, ...), beta = -sign(alpha) |H[c+1:ihi+1, c]| (larfg); then
// H[0:ihi+1, c+1:ihi+1] <- H (I - tau v v^T) and H[c+1:ihi+1, c+1:] <- (I - tau v v^T) H (gehd2).
// The reflector's tail stays below the subdiagonal for phase 2b.
void phase_hessenberg() {
  if (S.v[S0 + ST_INFO] != 0) return;  // uniform
  const int ilo = S.v[S0 + ST_ILO], ihi = S.v[S0 + ST_IHI];
  for (int c = max(pc.begin, ilo); c < min(pc.end, ihi - 1); ++c) {
    T part = T(0);
    for (int r = c + 2 + LID; r <= ihi; r += int(WG)) part = max(part, abs(h(r, c)));
    const T amax = wg_max(part);
    part = T(0);
    if (amax > T(0))
      for (int r = c + 2 + LID; r <= ihi; r += int(WG)) {
        T x = h(r, c) / amax;
        part += x * x;
      }
    const T ssq = wg_sum(part);
    const T xnorm = amax > T(0) ? amax * sqrt(ssq) : T(0);
    const T alpha = h(c + 1, c);
    T tau = T(0), beta = alpha, scale = T(1);
    if (xnorm != T(0)) {
      beta = -sign_of(hypot2(alpha, xnorm), alpha);
      tau = (beta - alpha) / beta;
      scale = T(1) / (alpha - beta);
    }
    sync();  // every invocation has read alpha
    if (tau != T(0))
      for (int r = c + 2 + LID; r <= ihi; r += int(WG)) set_h(r, c, h(r, c) * scale);
    if (LID == 0) {
      set_h(c + 1, c, beta);
      W.v[TAU0 + c] = tau;
    }
    sync();
    if (tau == T(0)) continue;  // uniform
    for (int r = LID; r <= ihi; r += int(WG)) {
      T w = h(r, c + 1);
      for (int t = c + 2; t <= ihi; ++t) w += h(r, t) * h(t, c);
      w *= tau;
      set_h(r, c + 1, h(r, c + 1) - w);
      for (int t = c + 2; t <= ihi; ++t) set_h(r, t, h(r, t) - w * h(t, c));
    }
    sync();
    for (int j = c + 1 + LID; j < N; j += int(WG)) {
      T w = h(c + 1, j);
      for (int t = c + 2; t <= ihi; ++t) w += h(t, c) * h(t, j);
      w *= tau;
      set_h(c + 1, j, h(c + 1, j) - w);
      for (int t = c + 2; t <= ihi; ++t) set_h(t, j, h(t, j) - w * h(t, c));
    }
    sync();
  }
}

// 2b. Z = H_ilo H_ilo+1 ... H_ihi-2 (orghr), reflectors [begin, end) per dispatch (the first
// sets Z = I), one invocation per row of Z (rows are independent: Z <- Z H_c touches row r
// only through row r, and row r stays with invocation r mod WG across the dispatches).
void phase_form_z() {
  if (S.v[S0 + ST_INFO] != 0) return;  // uniform
  const int ilo = S.v[S0 + ST_ILO], ihi = S.v[S0 + ST_IHI];
  for (int r = LID; r < N; r += int(WG)) {
    if (pc.begin == 0)
      for (int j = 0; j < N; ++j) W.v[Z0 + j * N + r] = r == j ? T(1) : T(0);
    for (int c = max(ilo, pc.begin); c < min(ihi - 1, pc.end); ++c) {
      const T tau = W.v[TAU0 + c];
      if (tau == T(0)) continue;
      T w = W.v[Z0 + (c + 1) * N + r];
      for (int t = c + 2; t <= ihi; ++t) w += W.v[Z0 + t * N + r] * h(t, c);
      w *= tau;
      W.v[Z0 + (c + 1) * N + r] -= w;
      for (int t = c + 2; t <= ihi; ++t) W.v[Z0 + t * N + r] -= w * h(t, c);
    }
  }
}

// 2c. Clears the reflector tails below H's subdiagonal, leaving the Hessenberg matrix.
void phase_clear() {
  if (S.v[S0 + ST_INFO] != 0) return;  // uniform
  for (int idx = LID; idx < N * N; idx += int(WG)) {
    int i = idx % N, j = idx / N;
    if (i > j + 1) W.v[H0 + idx] = T(0);
  }
}

// ---------------------------------------------------------------- 3. QR iteration
// The Schur factorization of a real 2x2 block [[a, b], [c, d]] = [[cs, -sn], [sn, cs]]
// [[aa, bb], [cc, dd]] [[cs, sn], [-sn, cs]] in standard form: either cc = 0 (real
// eigenvalues aa, dd) or aa = dd and bb * cc < 0 (eigenvalues aa +- i sqrt(-bb cc), the
// positive imaginary part first). LAPACK's lanv2 case by case.
void schur2(inout T a, inout T b, inout T c, inout T d, out T rt1r, out T rt1i, out T rt2r,
            out T rt2i, out T cs, out T sn) {
  const T eps = T_EPS;
  const T safmn2 = ldexp(T(1), T_SAFMN2_EXP), safmx2 = T(1) / safmn2;
  if (c == T(0)) {
    cs = T(1);
    sn = T(0);
  } else if (b == T(0)) {
    cs = T(0);
    sn = T(1);
    T t = d;
    d = a;
    a = t;
    b = -c;
    c = T(0);
  } else if (a - d == T(0) && sign_of(T(1), b) != sign_of(T(1), c)) {
    cs = T(1);
    sn = T(0);
  } else {
    T temp = a - d;
    T p = T(0.5) * temp;
    const T bcmax = max(abs(b), abs(c));
    const T bcmis = min(abs(b), abs(c)) * sign_of(T(1), b) * sign_of(T(1), c);
    T scale = max(abs(p), bcmax);
    T z = (p / scale) * p + (bcmax / scale) * bcmis;
    if (z >= T(4) * eps) {
      // Real eigenvalues.
      z = p + sign_of(sqrt(scale) * sqrt(z), p);
      a = d + z;
      d = d - (bcmax / z) * bcmis;
      const T tau = hypot2(c, z);
      cs = z / tau;
      sn = c / tau;
      b = b - c;
      c = T(0);
    } else {
      // Complex or (almost) equal real eigenvalues: make the diagonal equal.
      T sigma = b + c;
      for (int count = 0; count < 20; ++count) {
        scale = max(abs(temp), abs(sigma));
        if (scale >= safmx2) {
          sigma *= safmn2;
          temp *= safmn2;
          continue;
        }
        if (scale <= safmn2) {
          sigma *= safmx2;
          temp *= safmx2;
          continue;
        }
        break;
      }
      p = T(0.5) * temp;
      T tau = hypot2(sigma, temp);
      cs = sqrt(T(0.5) * (T(1) + abs(sigma) / tau));
      sn = -(p / (tau * cs)) * sign_of(T(1), sigma);
      const T aa = a * cs + b * sn, bb = -a * sn + b * cs;
      const T cc = c * cs + d * sn, dd = -c * sn + d * cs;
      a = aa * cs + cc * sn;
      b = bb * cs + dd * sn;
      c = -aa * sn + cc * cs;
      d = -bb * sn + dd * cs;
      temp = T(0.5) * (a + d);
      a = temp;
      d = temp;
      if (c != T(0)) {
        if (b != T(0)) {
          if (sign_of(T(1), b) == sign_of(T(1), c)) {
            // Real eigenvalues after all: reduce to upper triangular form.
            const T sab = sqrt(abs(b)), sac = sqrt(abs(c));
            p = sign_of(sab * sac, c);
            tau = T(1) / sqrt(abs(b + c));
            a = temp + p;
            d = temp - p;
            b = b - c;
            c = T(0);
            const T cs1 = sab * tau, sn1 = sac * tau;
            temp = cs * cs1 - sn * sn1;
            sn = cs * sn1 + sn * cs1;
            cs = temp;
          }
        } else {
          b = -c;
          c = T(0);
          temp = cs;
          cs = -sn;
          sn = temp;
        }
      }
    }
  }
  rt1r = a;
  rt2r = d;
  if (c == T(0)) {
    rt1i = T(0);
    rt2i = T(0);
  } else {
    rt1i = sqrt(abs(b)) * sqrt(abs(c));
    rt2i = -rt1i;
  }
}

// (x, y) <- (cs x + sn y, cs y - sn x) on rows r1, r2 of `base` (column-major n x n) over
// columns [c0, c1], or on columns c1', c2' over rows [r0, r1'] — split over the invocations.
void rotate_rows(int base, int r1, int r2, int c0, int c1, T cs, T sn) {
  for (int j = c0 + LID; j <= c1; j += int(WG)) {
    T x = W.v[base + j * N + r1], y = W.v[base + j * N + r2];
    W.v[base + j * N + r1] = cs * x + sn * y;
    W.v[base + j * N + r2] = cs * y - sn * x;
  }
}
void rotate_cols(int base, int k1, int k2, int r0, int r1, T cs, T sn) {
  for (int r = r0 + LID; r <= r1; r += int(WG)) {
    T x = W.v[base + k1 * N + r], y = W.v[base + k2 * N + r];
    W.v[base + k1 * N + r] = cs * x + sn * y;
    W.v[base + k2 * N + r] = cs * y - sn * x;
  }
}

// The reflector I - tau (1, v2, v3) (1, v2, v3)^T mapping (alpha, x2, x3) to (beta, 0, 0)
// (larfg for 2 or 3 entries; x3 = 0 for 2).
void reflector3(T alpha, inout T x2, inout T x3, out T beta, out T tau) {
  const T xnorm = hypot2(x2, x3);
  if (xnorm == T(0)) {
    beta = alpha;
    tau = T(0);
    x2 = T(0);
    x3 = T(0);
    return;
  }
  beta = -sign_of(hypot2(alpha, xnorm), alpha);
  tau = (beta - alpha) / beta;
  const T scale = T(1) / (alpha - beta);
  x2 *= scale;
  x3 *= scale;
}

// Runs QR iterations on the state's active window until it is done or the work budget (loop
// iterations, counted from the loops' lengths) would be exceeded by the next iteration; every
// dispatch runs at least one.
void phase_qr() {
  if (S.v[S0 + ST_DONE] != 0) return;  // uniform
  const bool vectors = (pc.flags & 1) != 0;
  const int ilo = S.v[S0 + ST_ILO], ihi = S.v[S0 + ST_IHI];
  int i = S.v[S0 + ST_I], l = S.v[S0 + ST_L];
  int kdefl = S.v[S0 + ST_KDEFL], its = S.v[S0 + ST_ITS];
  int info = 0;
  const int nh = ihi - ilo + 1;
  const int itmax = pc.itmax > 0 ? pc.itmax : 30 * max(10, nh);
  const T ulp = T_EPS;
  const T smlnum = T_SAFMIN * (T(nh) / ulp);
  const int budget = pc.end - pc.begin;
  const int q = (N + int(WG) - 1) / int(WG);
  const int per_step = 3 * q + 8;  // the left, right and Z loops of a bulge-chase step
  int work = 0;
  sync();  // everyone has read the state (lid 0 rewrites it at the end)
  while (i >= ilo && (work == 0 || work + (i - l + 3) * per_step + 32 <= budget)) {
    // Look for a negligible subdiagonal entry H(k, k-1), k in (l, i] (Ahues-Kressner).
    int k = i;
    for (; k > l; --k) {
      const T hkk1 = abs(h(k, k - 1));
      if (hkk1 <= smlnum) break;
      T tst = abs(h(k - 1, k - 1)) + abs(h(k, k));
      if (tst == T(0)) {
        if (k - 2 >= ilo) tst += abs(h(k - 1, k - 2));
        if (k + 1 <= ihi) tst += abs(h(k + 1, k));
      }
      if (hkk1 <= ulp * tst) {
        const T hk1k = abs(h(k - 1, k));
        const T ab = max(hkk1, hk1k), ba = min(hkk1, hk1k);
        const T dkk = abs(h(k, k)), dd = abs(h(k - 1, k - 1) - h(k, k));
        const T aa = max(dkk, dd), bb = min(dkk, dd);
        const T s = aa + ab;
        if (ba * (ab / s) <= max(smlnum, ulp * (bb * (aa / s)))) break;
      }
    }
    work += i - k + 2;
    l = k;
    const int i1 = vectors ? 0 : l, i2 = vectors ? N - 1 : i;
    if (l >= i - 1) {
      // A 1x1 or 2x2 block split off at the bottom.
      if (l == i) {
        sync();
        if (LID == 0) {
          if (l > ilo) set_h(l, l - 1, T(0));
          W.v[WR0 + i] = h(i, i);
          W.v[WI0 + i] = T(0);
        }
      } else {
        T a = h(i - 1, i - 1), bq = h(i - 1, i), c = h(i, i - 1), d = h(i, i);
        T rt1r, rt1i, rt2r, rt2i, cs, sn;
        schur2(a, bq, c, d, rt1r, rt1i, rt2r, rt2i, cs, sn);
        sync();  // every invocation has read the block
        if (LID == 0) {
          if (l > ilo) set_h(l, l - 1, T(0));
          set_h(i - 1, i - 1, a);
          set_h(i - 1, i, bq);
          set_h(i, i - 1, c);
          set_h(i, i, d);
          W.v[WR0 + i - 1] = rt1r;
          W.v[WI0 + i - 1] = rt1i;
          W.v[WR0 + i] = rt2r;
          W.v[WI0 + i] = rt2i;
        }
        if (vectors) {
          rotate_rows(H0, i - 1, i, i + 1, i2, cs, sn);
          rotate_cols(H0, i - 1, i, i1, i - 2, cs, sn);
          rotate_cols(Z0, i - 1, i, 0, N - 1, cs, sn);
        }
      }
      sync();
      kdefl = 0;
      its = 0;
      i = l - 1;
      l = ilo;
      work += per_step + 24;  // the rotations and lanv2's rescaling loop
      continue;
    }
    if (its > itmax) {
      info = i + 1;
      break;
    }
    ++its;
    ++kdefl;
    // Shifts: the eigenvalues of the trailing 2x2 (Francis), or an exceptional pair every
    // 10 iterations without a deflation.
    T h11, h12, h21, h22;
    if (kdefl % 20 == 0) {
      const T s = abs(h(i, i - 1)) + abs(h(i - 1, i - 2));
      h11 = T(0.75) * s + h(i, i);
      h12 = T(-0.4375) * s;
      h21 = s;
      h22 = h11;
    } else if (kdefl % 10 == 0) {
      const T s = abs(h(l + 1, l)) + abs(h(l + 2, l + 1));
      h11 = T(0.75) * s + h(l, l);
      h12 = T(-0.4375) * s;
      h21 = s;
      h22 = h11;
    } else {
      h11 = h(i - 1, i - 1);
      h21 = h(i, i - 1);
      h12 = h(i - 1, i);
      h22 = h(i, i);
    }
    T rt1r, rt1i, rt2r, rt2i;
    {
      const T s = abs(h11) + abs(h12) + abs(h21) + abs(h22);
      if (s == T(0)) {
        rt1r = T(0);
        rt1i = T(0);
        rt2r = T(0);
        rt2i = T(0);
      } else {
        h11 /= s;
        h21 /= s;
        h12 /= s;
        h22 /= s;
        const T tr = (h11 + h22) / T(2);
        const T det = (h11 - tr) * (h22 - tr) - h12 * h21;
        const T rtdisc = sqrt(abs(det));
        if (det >= T(0)) {
          rt1r = tr * s;
          rt2r = rt1r;
          rt1i = rtdisc * s;
          rt2i = -rt1i;
        } else {
          // Real shifts: use the one closer to h22 twice.
          rt1r = tr + rtdisc;
          rt2r = tr - rtdisc;
          if (abs(rt1r - h22) <= abs(rt2r - h22)) rt1r *= s;
          else rt1r = rt2r * s;
          rt2r = rt1r;
          rt1i = T(0);
          rt2i = T(0);
        }
      }
    }
    // Start the sweep at the lowest m whose first column of the shift polynomial makes
    // H(m, m-1) negligible (two consecutive small subdiagonals).
    int m = i - 2;
    T v1 = T(0), v2 = T(0), v3 = T(0);
    for (;; --m) {
      T h21s = h(m + 1, m);
      T s = abs(h(m, m) - rt2r) + abs(rt2i) + abs(h21s);
      h21s = h(m + 1, m) / s;
      v1 = h21s * h(m, m + 1) + (h(m, m) - rt1r) * ((h(m, m) - rt2r) / s) - rt1i * (rt2i / s);
      v2 = h21s * (h(m, m) + h(m + 1, m + 1) - rt1r - rt2r);
      v3 = h21s * h(m + 2, m + 1);
      s = abs(v1) + abs(v2) + abs(v3);
      v1 /= s;
      v2 /= s;
      v3 /= s;
      if (m == l) break;
      const T h00 = abs(h(m, m - 1)) * (abs(v2) + abs(v3));
      const T h01 = ulp * abs(v1) * (abs(h(m - 1, m - 1)) + abs(h(m, m)) + abs(h(m + 1, m + 1)));
      if (h00 <= h01) break;
    }
    sync();  // every invocation has made the decisions above from the same H
    if (LID == 0 && l > ilo) set_h(l, l - 1, T(0));
    // The double-shift sweep: a 3x3 (last: 2x2) reflector per step chases the bulge down.
    for (int kk = m; kk < i; ++kk) {
      const int nr = min(3, i - kk + 1);
      if (kk > m) {
        v1 = h(kk, kk - 1);
        v2 = h(kk + 1, kk - 1);
        v3 = nr == 3 ? h(kk + 2, kk - 1) : T(0);
      }
      T beta, t1;
      reflector3(v1, v2, v3, beta, t1);
      const T t2 = t1 * v2, t3 = t1 * v3;
      // From the left: rows kk..kk+nr-1, columns kk..i2 (column kk-1 is set below).
      for (int j = kk + LID; j <= i2; j += int(WG)) {
        T s = h(kk, j) + v2 * h(kk + 1, j);
        if (nr == 3) s += v3 * h(kk + 2, j);
        set_h(kk, j, h(kk, j) - s * t1);
        set_h(kk + 1, j, h(kk + 1, j) - s * t2);
        if (nr == 3) set_h(kk + 2, j, h(kk + 2, j) - s * t3);
      }
      sync();
      // From the right: columns kk..kk+nr-1, rows i1..min(kk+3, i); and Z.
      const int rlast = min(kk + 3, i);
      for (int r = i1 + LID; r <= rlast; r += int(WG)) {
        T s = h(r, kk) + v2 * h(r, kk + 1);
        if (nr == 3) s += v3 * h(r, kk + 2);
        set_h(r, kk, h(r, kk) - s * t1);
        set_h(r, kk + 1, h(r, kk + 1) - s * t2);
        if (nr == 3) set_h(r, kk + 2, h(r, kk + 2) - s * t3);
      }
      if (vectors)
        for (int r = LID; r < N; r += int(WG)) {
          const int a0 = Z0 + kk * N + r;
          T s = W.v[a0] + v2 * W.v[a0 + N];
          if (nr == 3) s += v3 * W.v[a0 + 2 * N];
          W.v[a0] -= s * t1;
          W.v[a0 + N] -= s * t2;
          if (nr == 3) W.v[a0 + 2 * N] -= s * t3;
        }
      if (LID == 0) {
        if (kk > m) {
          set_h(kk, kk - 1, beta);
          set_h(kk + 1, kk - 1, T(0));
          if (kk < i - 1) set_h(kk + 2, kk - 1, T(0));
        } else if (m > l) {
          // (1 - t1) * H rather than -H: safe when v2, v3 underflowed (as LAPACK).
          set_h(kk, kk - 1, h(kk, kk - 1) * (T(1) - t1));
        }
      }
      sync();
    }
    work += (i - m) * per_step + (i - m) + 8;
  }
  sync();
  if (LID == 0) {
    S.v[S0 + ST_I] = i;
    S.v[S0 + ST_L] = l;
    S.v[S0 + ST_KDEFL] = kdefl;
    S.v[S0 + ST_ITS] = its;
    if (info != 0) S.v[S0 + ST_INFO] = info;
    if (info != 0 || i < ilo) S.v[S0 + ST_DONE] = 1;
  }
}

// ---------------------------------------------------------------- 4. eigenvectors of T
// Solves (A - (wr + i wi)) x = scale * rhs for a 1x1 (na == 1) or 2x2 block A = [[a11, a12],
// [a21, a22]] with complex rhs = (r1, r2), choosing scale <= 1 so that x does not overflow
// (laln2): complete pivoting for the 2x2; a pivot below smin is replaced by smin (a singular
// block, e.g. a repeated eigenvalue, gives a large finite x). x overwrites (r1, r2); xnorm is
// max_k |x_k|_1.
void solve_block(int na, T smin, T a11, T a12, T a21, T a22, T wr, T wi, inout CT r1, inout CT r2,
                 out T scale, out T xnorm, T bignum) {
  const T smini = max(smin, T_SAFMIN);
  scale = T(1);
  if (na == 1) {
    CT cpiv = CT(a11 - wr, -wi);
    if (cabs1(cpiv) < smini) cpiv = CT(smini, T(0));
    const T cnorm = cabs1(cpiv), bnorm = cabs1(r1);
    if (cnorm < T(1) && bnorm > T(1) && bnorm > bignum * cnorm) scale = T(1) / bnorm;
    r1 = cdiv(r1 * scale, cpiv);
    xnorm = cabs1(r1);
    return;
  }
  // C = A - w I in column-major order c[0] = C11, c[1] = C21, c[2] = C12, c[3] = C22.
  CT c[4] = CT[4](CT(a11 - wr, -wi), CT(a21, T(0)), CT(a12, T(0)), CT(a22 - wr, -wi));
  T cmax = T(0);
  int icmax = 0;
  for (int t = 0; t < 4; ++t)
    if (cabs1(c[t]) > cmax) {
      cmax = cabs1(c[t]);
      icmax = t;
    }
  if (cmax < smini) {
    // Essentially zero: use smin * I.
    const T bnorm = max(cabs1(r1), cabs1(r2));
    if (smini < T(1) && bnorm > T(1) && bnorm > bignum * smini) scale = T(1) / bnorm;
    const T temp = scale / smini;
    r1 *= temp;
    r2 *= temp;
    xnorm = temp * bnorm;
    return;
  }
  // Pivot c[icmax]; the entry in its column (other row), its row (other column), and the
  // opposite corner: with icmax = 2 * col + row, they are icmax ^ 1, icmax ^ 2, icmax ^ 3.
  const CT u11 = c[icmax], c21 = c[icmax ^ 1], u12 = c[icmax ^ 2], c22 = c[icmax ^ 3];
  const bool swap_rows = (icmax & 1) != 0, swap_x = (icmax & 2) != 0;
  const CT u11r = cdiv(CT(T(1), T(0)), u11);
  const CT l21 = cmul(u11r, c21);
  CT u22 = c22 - cmul(u12, l21);
  if (cabs1(u22) < smini) u22 = CT(smini, T(0));
  CT b1 = swap_rows ? r2 : r1, b2 = swap_rows ? r1 : r2;
  b2 -= cmul(l21, b1);
  const T bbnd = max(cabs1(cmul(b1, cmul(u22, u11r))), cabs1(b2));
  if (bbnd > T(1) && cabs1(u22) < T(1) && bbnd >= bignum * cabs1(u22)) scale = T(1) / bbnd;
  const CT x2 = cdiv(b2 * scale, u22);
  const CT x1 = cmul(b1 * scale, u11r) - cmul(x2, cmul(u11r, u12));
  r1 = swap_x ? x2 : x1;
  r2 = swap_x ? x1 : x2;
  xnorm = max(cabs1(x1), cabs1(x2));
  if (xnorm > T(1) && cmax > T(1) && xnorm > bignum / cmax) {
    const T temp = cmax / bignum;
    r1 *= temp;
    r2 *= temp;
    xnorm *= temp;
    scale *= temp;
  }
}

// Whether T(j, j-1) starts a 2x2 block ending at row j.
bool pair_below(int j) { return j > 0 && h(j, j - 1) != T(0); }

// Column ki of X (a real eigenvalue) or columns ki-1, ki (real and imaginary part of the
// vector of wr + i wi, wi > 0, a 2x2 block ending at ki): back-substitution through T's
// leading ki (ki - 1) rows, right-hand sides scaled down (by `scale`) whenever a component
// would overflow given the column norms of T (trevc). Rows beyond the block are 0. Each
// block solve is computed by every invocation (uniform), the right-hand side update is split
// over the rows.
void eigenvector(int ki, bool pair, T smlnum, T bignum) {
  const int xr = X0 + (pair ? ki - 1 : ki) * N;  // real part
  const int xi = X0 + ki * N;                     // imaginary part (pairs)
  const T wr = h(ki, ki);
  const T wi = pair ? sqrt(abs(h(ki, ki - 1))) * sqrt(abs(h(ki - 1, ki))) : T(0);
  const T smin = max(T_EPS * (abs(wr) + abs(wi)), smlnum);
  int top;  // the rows above the eigenvalue's own block: 0 .. top - 1
  if (!pair) {
    for (int r = LID; r < N; r += int(WG)) W.v[xr + r] = r < ki ? -h(r, ki) : (r == ki ? T(1) : T(0));
    top = ki;
  } else {
    T re1, im2;
    if (abs(h(ki - 1, ki)) >= abs(h(ki, ki - 1))) {
      re1 = T(1);
      im2 = wi / h(ki - 1, ki);
    } else {
      re1 = -wi / h(ki, ki - 1);
      im2 = T(1);
    }
    for (int r = LID; r < N; r += int(WG)) {
      W.v[xr + r] = r < ki - 1 ? -re1 * h(r, ki - 1) : (r == ki - 1 ? re1 : T(0));
      W.v[xi + r] = r < ki - 1 ? -im2 * h(r, ki) : (r == ki ? im2 : T(0));
    }
    top = ki - 1;
  }
  sync();
  int j = top - 1;
  while (j >= 0) {
    const bool two = pair_below(j);
    const int j1 = two ? j - 1 : j;
    CT r1 = CT(W.v[xr + j1], pair ? W.v[xi + j1] : T(0));
    CT r2 = two ? CT(W.v[xr + j], pair ? W.v[xi + j] : T(0)) : CT(T(0));
    T scale, xnorm;
    if (two)
      solve_block(2, smin, h(j1, j1), h(j1, j), h(j, j1), h(j, j), wr, wi, r1, r2, scale, xnorm, bignum);
    else
      solve_block(1, smin, h(j, j), T(0), T(0), T(0), wr, wi, r1, r2, scale, xnorm, bignum);
    if (xnorm > T(1)) {
      const T beta = two ? max(W.v[CN0 + j1], W.v[CN0 + j]) : W.v[CN0 + j];
      if (beta > bignum / xnorm) {
        r1 /= xnorm;
        r2 /= xnorm;
        scale /= xnorm;
      }
    }
    sync();  // every invocation has read the right-hand side of the block
    // Rows 0..ki: scaled, the block's rows set, the rows above updated (row r by one
    // invocation).
    for (int r = LID; r <= ki; r += int(WG)) {
      if (r == j1 || (two && r == j)) {
        const CT x = r == j1 ? r1 : r2;
        W.v[xr + r] = x.x;
        if (pair) W.v[xi + r] = x.y;
        continue;
      }
      T re = W.v[xr + r], im = pair ? W.v[xi + r] : T(0);
      if (scale != T(1)) {
        re *= scale;
        im *= scale;
      }
      if (r < j1) {
        const T t1 = h(r, j1), t2 = two ? h(r, j) : T(0);
        re -= r1.x * t1 + r2.x * t2;
        im -= r1.y * t1 + r2.y * t2;
      }
      W.v[xr + r] = re;
      if (pair) W.v[xi + r] = im;
    }
    sync();
    j = j1 - 1;
  }
}

// The 1-norms of T's strictly upper columns (trevc's overflow control), one invocation per
// column.
void phase_column_norms() {
  if (S.v[S0 + ST_INFO] != 0) return;  // uniform
  for (int j = LID; j < N; j += int(WG)) {
    T acc = T(0);
    for (int r = 0; r < j; ++r) acc += abs(h(r, j));
    W.v[CN0 + j] = acc;
  }
}

// The eigenvectors whose block ends at a column in [begin, end) (a real eigenvalue, or the
// second column of a pair), one after the other, each split over the workgroup.
void phase_vectors() {
  if (S.v[S0 + ST_INFO] != 0) return;  // uniform
  const T smlnum = T_SAFMIN * (T(N) / T_EPS);
  const T bignum = (T(1) - T_EPS) / smlnum;
  for (int ki = pc.begin; ki < min(N, pc.end); ++ki) {
    if (ki + 1 < N && pair_below(ki + 1)) continue;  // first column of a pair
    eigenvector(ki, pair_below(ki), smlnum, bignum);
  }
}

// 5a. V = Z X for columns [begin, end) (X is upper triangular: column c has entries up to
// row c).
void phase_back() {
  if (S.v[S0 + ST_INFO] != 0) return;  // uniform
  const int c0 = pc.begin, c1 = min(N, pc.end);
  for (int idx = LID; idx < N * (c1 - c0); idx += int(WG)) {
    const int r = idx % N, c = c0 + idx / N;
    T acc = T(0);
    for (int t = 0; t <= c; ++t) acc += W.v[Z0 + t * N + r] * W.v[X0 + c * N + t];
    W.v[V0 + c * N + r] = acc;
  }
}

// 5b. Columns [begin, end), one invocation per eigenvalue: writes it, and (vectors) undoes the balancing of its
// vector (gebak: row scaling, then the row exchanges), normalizes it to norm 1 (first by its
// largest entry, so the norm cannot overflow) and, for a pair, rotates the component of
// largest modulus to the real axis: (f, g) -> (r, 0) with r = +sqrt(f^2 + g^2) unless
// |f| > |g| and f < 0 (LAPACK's dlartg, whose sign rule MKL's geev also follows).
void phase_output(int b) {
  const int info = S.v[S0 + ST_INFO];
  const bool vectors = (pc.flags & 1) != 0 && info == 0;
  const int ilo = S.v[S0 + ST_ILO], ihi = S.v[S0 + ST_IHI];
  TArr VALS = TArr(pc.vals_addr);
  TArr VECS = TArr(pc.vecs_addr);
  for (int c = pc.begin + LID; c < min(N, pc.end); c += int(WG)) {
    const int at = b * pc.vals_sb + c * pc.vals_s;
    if (info < 0) {
      const T nan = T(0) / T(0);
      VALS.v[at] = nan;
      VALS.v[at + 1] = nan;
    } else {
      VALS.v[at] = W.v[WR0 + c];
      VALS.v[at + 1] = W.v[WI0 + c];
    }
    if (!vectors) continue;
    const T wi = W.v[WI0 + c];
    if (wi < T(0)) continue;  // second column of a pair: written with the first
    const bool pair = wi > T(0);
    const int vr = V0 + c * N, vi = V0 + (c + 1) * N;
    // (ilo == ihi: nothing was scaled, and scale[ilo] may be a permutation index.)
    for (int r = ilo; r <= ihi && ilo < ihi; ++r) {
      const T s = W.v[SC0 + r];
      W.v[vr + r] *= s;
      if (pair) W.v[vi + r] *= s;
    }
    for (int ii = 0; ii < N; ++ii) {
      int r = ii;
      if (r >= ilo && r <= ihi) continue;
      if (r < ilo) r = ilo - 1 - ii;
      const int k = int(W.v[SC0 + r]);
      if (k == r) continue;
      T t = W.v[vr + r];
      W.v[vr + r] = W.v[vr + k];
      W.v[vr + k] = t;
      if (pair) {
        t = W.v[vi + r];
        W.v[vi + r] = W.v[vi + k];
        W.v[vi + k] = t;
      }
    }
    T emax = T(0);
    for (int r = 0; r < N; ++r) emax = max(emax, abs(W.v[vr + r]) + (pair ? abs(W.v[vi + r]) : T(0)));
    const T inv = emax > T(0) ? T(1) / emax : T(1);
    T ssq = T(0);
    for (int r = 0; r < N; ++r) {
      T x = W.v[vr + r] * inv, y = pair ? W.v[vi + r] * inv : T(0);
      ssq += x * x + y * y;
    }
    const T scale = inv / sqrt(ssq);
    const int o = b * pc.vec_sb + c * pc.vec_cs;
    if (!pair) {
      for (int r = 0; r < N; ++r) {
        VECS.v[o + r * pc.vec_rs] = W.v[vr + r] * scale;
        VECS.v[o + r * pc.vec_rs + 1] = T(0);
      }
      continue;
    }
    int kmax = 0;
    T best = T(-1);
    for (int r = 0; r < N; ++r) {
      const T x = W.v[vr + r] * scale, y = W.v[vi + r] * scale;
      const T m2 = x * x + y * y;
      if (m2 > best) {
        best = m2;
        kmax = r;
      }
    }
    const T f = W.v[vr + kmax] * scale, g = W.v[vi + kmax] * scale;
    T cs = T(1), sn = T(0);
    if (g != T(0)) {
      if (f == T(0)) {
        cs = T(0);
        sn = T(1);
      } else {
        const T d = hypot2(f, g);
        cs = f / d;
        sn = g / d;
        if (abs(f) > abs(g) && cs < T(0)) {
          cs = -cs;
          sn = -sn;
        }
      }
    }
    for (int r = 0; r < N; ++r) {
      const T x = W.v[vr + r] * scale, y = W.v[vi + r] * scale;
      const T re = cs * x + sn * y;
      const T im = r == kmax ? T(0) : cs * y - sn * x;
      VECS.v[o + r * pc.vec_rs] = re;
      VECS.v[o + r * pc.vec_rs + 1] = im;
      VECS.v[o + pc.vec_cs + r * pc.vec_rs] = re;
      VECS.v[o + pc.vec_cs + r * pc.vec_rs + 1] = -im;
    }
  }
}

void main() {
  for (int b = int(gl_WorkGroupID.x); b < pc.batch; b += int(gl_NumWorkGroups.x)) {
    select_matrix(b);
    switch (pc.phase) {
      case PHASE_INIT: phase_init(b); break;
      case PHASE_BALANCE: phase_balance(); break;
      case PHASE_CLEAR: phase_clear(); break;
      case PHASE_COLUMN_NORMS: phase_column_norms(); break;
      case PHASE_HESSENBERG: phase_hessenberg(); break;
      case PHASE_FORM_Z: phase_form_z(); break;
      case PHASE_QR: phase_qr(); break;
      case PHASE_VECTORS: phase_vectors(); break;
      case PHASE_BACK: phase_back(); break;
      case PHASE_OUTPUT: phase_output(b); break;
    }
    sync();  // the shared state is reused by the next matrix
  }
}
