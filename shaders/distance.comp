#version 460
// Pairwise p-norm distances: cdist and pdist, and their gradients.
//
// Ops (OP define; src/kernels/distance.h documents operands and sizes):
//   0 cdist           out[b, i, j] = ||x1[b, i, :] - x2[b, j, :]||_p          (one invocation per output)
//   1 cdist_backward  out[b, i, k] = sum_j F(x1[b, i, k] - x2[b, j, k], grad[b, i, j], dist[b, i, j])
//   2 pdist           out[q] = ||x[i, :] - x[j, :]||_p for the q-th pair i < j (row-major upper triangle)
//   3 pdist_backward  out[i, k] = sum_{j != i} F(x[i, k] - x[j, k], grad[q(i, j)], dist[q(i, j)])
// F is the CPU's per-norm derivative (DistanceOpsKernel.cpp), odd in the difference, so the
// pdist gradient of row j from pair (i, j) is F(x[j] - x[i]) and each output element is
// computed by one invocation without atomics.
// NORM (push constant `norm`): 0 (p = 0: count of differing coordinates), 1, 2, 3 (p = inf),
// 4 (other p). Math in fp32 (KIND 0: float32 operands) or fp64 (KIND 3).
//
// Contiguous operands: x1 [B, R1, M], x2 [B, R2, M], grad / dist [B, R1, R2] (cdist), x [N, M]
// and grad / dist [N (N - 1) / 2] (pdist, r1 = r2 = N, batch = 1).
// A tiled variant (rows of x1 / x2 staged in shared memory) would cut global reads on large
// problems; this one reads each row pair once per output and stays portable.
// Split (devices with a loop limit, DeviceCapabilities::max_loop_iterations): every output
// walks one dim serially (M for cdist / pdist, r2 for cdist_backward, N for pdist_backward).
// With state != 0 a pass walks only [l_begin, l_end) of it, the running accumulator of output
// e at element e of `state` (the accumulator type): read when l_begin > 0, written instead of
// the output when l_end is short of the dim; the launcher records the passes in order.
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"
#include "math.glsl"

#ifndef OP
#define OP 0
#endif

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
  uint64_t addr[5];  //  0: out, x1 (x), x2, grad, dist
#if TVK_FLOAT64
  double pd;         // 40: p
#else
  uint64_t pd_bits;
#endif
  float pf;          // 48: p (float32 kinds)
  int norm;          // 52
  int numel;         // 56: outputs
  int batch;         // 60
  int r1;            // 64
  int r2;            // 68
  int m;             // 72
  int dtype;         // 76: the dtype of every operand
  uint64_t state;    // 80: split state (0: one pass), see below
  int l_begin;       // 88: split: this pass's range of the walked dim
  int l_end;         // 92
} pc;                // 96 bytes

#if KIND == KIND_FLOAT64
#define PNORM pc.pd
#else
#define PNORM pc.pf
#endif

T ld(int k, int i) { return LOAD_T(pc.addr[k], pc.dtype, i); }

T sign_of(T v) { return v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0)); }

// a^b for a >= 0 (exponents used here: p, 1 / p, p - 1, p - 2). 0^0 = 1, 0^b = 0 for b > 0;
// a zero base with a negative exponent never reaches here (dist_grad returns 0 first, as the CPU).
T pow_abs(T a, T b) {
  if (a == T(0)) return b == T(0) ? T(1) : T(0);
  return tvk_exp(b * tvk_log(a));
}

// ---- forward: accumulate the norm of a difference vector
T dist_accumulate(T acc, T diff) {
  T a = abs(diff);
  switch (pc.norm) {
    case 0: return acc + (a != T(0) ? T(1) : T(0));
    case 1: return acc + a;
    case 2: return acc + a * a;
    case 3: return tvk_isnan(a) ? a : (tvk_isnan(acc) ? acc : max(acc, a));
    default: return acc + pow_abs(a, PNORM);
  }
}

T dist_finish(T acc) {
  if (pc.norm == 2) return sqrt(acc);
  if (pc.norm == 4) return pow_abs(acc, T(1) / PNORM);
  return acc;
}

// ---- backward: d dist / d x1 times grad for one coordinate
T dist_grad(T diff, T grad, T dist) {
  switch (pc.norm) {
    case 0: return T(0);
    case 1: return grad * sign_of(diff);
    case 2: return dist == T(0) ? T(0) : grad * diff / dist;
    case 3: return abs(diff) == dist ? grad * sign_of(diff) : T(0);
    default: {
      T p = PNORM;
      if (dist == T(0)) return T(0);
      if (p < T(2)) {
        if (diff == T(0) && p < T(1)) return T(0);
        return sign_of(diff) * pow_abs(abs(diff), p - T(1)) * grad / pow_abs(dist, p - T(1));
      }
      return diff * pow_abs(abs(diff), p - T(2)) * grad / pow_abs(dist, p - T(1));
    }
  }
}

#if OP == 2 || OP == 3
// Index of pair (i, j), i < j, among the N (N - 1) / 2 pairs in row-major order.
int pair_index(int i, int j, int n) {
  return int(int64_t(i) * int64_t(n) - int64_t(i) * int64_t(i + 1) / 2l + int64_t(j - i - 1));
}
#endif

#if KIND == KIND_FLOAT64
#define ACC_DT DT_FLOAT64
#else
#define ACC_DT DT_FLOAT32
#endif

// The range of the walked dim of length n this pass covers, and the carried accumulator.
void pass_range(uint e, int n, out int first, out int last, inout T acc) {
  first = 0;
  last = n;
  if (pc.state == 0ul) return;
  first = pc.l_begin;
  last = min(n, pc.l_end);
  if (first > 0) acc = LOAD_T(pc.state, ACC_DT, int(e));
}

// Stores the carried accumulator when more passes follow (then true).
bool pass_more(uint e, int n, T acc) {
  if (pc.state == 0ul || pc.l_end >= n) return false;
  STORE_T(pc.state, ACC_DT, int(e), acc);
  return true;
}

void item(uint e) {
  int M = pc.m;
  int first, last;
#if OP == 0
  uint r2 = uint(pc.r2), r1 = uint(pc.r1);
  uint j = e % r2;
  uint bi = e / r2;  // b * R1 + i
  uint b = bi / r1;
  int row1 = int(bi) * M;
  int row2 = int(b * r2 + j) * M;
  T acc = T(0);
  pass_range(e, M, first, last, acc);
  for (int k = first; k < last; ++k) acc = dist_accumulate(acc, ld(1, row1 + k) - ld(2, row2 + k));
  if (pass_more(e, M, acc)) return;
  STORE_T(pc.addr[0], pc.dtype, int(e), dist_finish(acc));
#elif OP == 1
  uint k = e % uint(M);
  uint bi = e / uint(M);
  uint b = bi / uint(pc.r1);
  T xi = ld(1, int(e));
  T acc = T(0);
  int g0 = int(bi) * pc.r2;
  int x2_0 = int(b) * pc.r2 * M + int(k);
  pass_range(e, pc.r2, first, last, acc);
  for (int j = first; j < last; ++j)
    acc += dist_grad(xi - ld(2, x2_0 + j * M), ld(3, g0 + j), ld(4, g0 + j));
  if (pass_more(e, pc.r2, acc)) return;
  STORE_T(pc.addr[0], pc.dtype, int(e), acc);
#elif OP == 2
  // Row i of pair q: the largest i with start(i) = i N - i (i + 1) / 2 <= q, from the
  // quadratic formula and corrected in exact integer arithmetic.
  int64_t n = int64_t(pc.r1), q = int64_t(e);
  float n2 = float(n) - 0.5;
  int64_t i = int64_t(max(floor(n2 - sqrt(max(n2 * n2 - 2.0 * float(q) - 1.0, 0.0))), 0.0));
  while (i > 0l && i * n - i * (i + 1l) / 2l > q) --i;
  while ((i + 1l) * n - (i + 1l) * (i + 2l) / 2l <= q) ++i;
  int64_t j = q - (i * n - i * (i + 1l) / 2l) + i + 1l;
  int row1 = int(i) * M, row2 = int(j) * M;
  T acc = T(0);
  pass_range(e, M, first, last, acc);
  for (int k = first; k < last; ++k) acc = dist_accumulate(acc, ld(1, row1 + k) - ld(1, row2 + k));
  if (pass_more(e, M, acc)) return;
  STORE_T(pc.addr[0], pc.dtype, int(e), dist_finish(acc));
#elif OP == 3
  int n = pc.r1;
  int i = int(e / uint(M));
  int k = int(e % uint(M));
  T xi = ld(1, int(e));
  T acc = T(0);
  pass_range(e, n, first, last, acc);
  for (int j = first; j < last; ++j) {
    if (j == i) continue;
    int q = i < j ? pair_index(i, j, n) : pair_index(j, i, n);
    acc += dist_grad(xi - ld(1, j * M + k), ld(3, q), ld(4, q));
  }
  if (pass_more(e, n, acc)) return;
  STORE_T(pc.addr[0], pc.dtype, int(e), acc);
#endif
}

void main() {
  uint n = uint(pc.numel);
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < n; e += step) item(e);
}
