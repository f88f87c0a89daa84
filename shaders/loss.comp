#version 460
// Loss functions: the element-wise loss terms and their gradients (reductions are done by the
// caller with the reduce kernels), and the gather / scatter of nll_loss.
//
// Ops (OP define; src/kernels/loss.h documents operands and parameters):
//   0 mse          out = (x - y)^2                      in0 = x, in1 = y
//   1 mse_bwd      out = norm * 2 * (x - y) * g         in0 = g, in1 = x, in2 = y
//   2 smooth_l1    |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta (beta = 0: |d|)
//   3 smooth_l1_bwd
//   4 huber        |d| < delta ? 0.5 d^2 : delta (|d| - 0.5 delta)
//   5 huber_bwd
//   6 bce          -w (y max(log x, -100) + (1 - y) max(log(1 - x), -100))   in2 = w (flag 1)
//   7 bce_bwd      norm * w * g (x - y) / max(x (1 - x), 1e-12)              in0 = g, in3 = w
//   8 bce_logits   w ((1 - y) x - (1 + (pw - 1) y) logsigmoid(x))   in2 = w (flag 1), in3 = pw (flag 2)
//  10 nll          per sample (n, s): t = target; v = -w[t] x[n, t, s], and w[t]
//  11 nll_bwd      grad_input[n, t, s] = w[t] * -(g / total_weight or g)
//  12 multi_margin       per row n of x [N, C]: out[n] = sum_{i != t} w[t] max(0, m - x[t] + x[i])^p / C
//  13 multi_margin_bwd   grad_input [N, C]
//  14 multilabel_margin  per row n: out[n] = sum_{j < L} sum_{i not a target} max(0, 1 - x[t_j] + x[i]) / C,
//                        and is_target [N, C] (t_j: the row's targets up to the first negative one)
//  15 multilabel_margin_bwd  grad_input [N, C] (element-parallel)
//  16 ctc_alpha      log_alpha [N, T, S] and nll [N]: the CTC forward recursion in log space
//  17 ctc_beta       log_beta [N, T, S]: the backward recursion
//  18 ctc_grad       grad [T, N, C] from log_alpha + log_beta (element-parallel)
// P0 = beta / delta, P1 = norm (the gradient scale, 1 / numel for mean). Math in fp32 for
// float16 / bfloat16 / float32 (KIND 0) or fp64 (KIND 3); stores round once.
//
// ABI (mirrored by LossPush in src/kernels/loss.cpp): see `Push`. Element-wise ops: `numel`
// elements, `geometry` -> int32 sizes[8], strides[6][8] (dim 0 fastest, operand 0 = out),
// `mode` = ndim. NLL: contiguous self [N, C, S] (in0), target [N, S] (in1, int64 or uint8),
// optional weight [C] (in2); `mode` = flags (1 weight, 2 reduction none, 4 mean), aux0 = C,
// aux1 = S, pi = ignore_index.
//   Forward, reduction none: out[i] = v (i = n * S + s). Otherwise out is the accumulator
//   dtype scratch [2, numel]: out[i] = v, out[numel + i] = w (the caller sums both halves).
//   Backward: out = grad_input (contiguous, zeroed by the caller), in3 = grad_output (per
//   sample with reduction none, else one element), in4 = total_weight (mean).
// Targets outside [0, C) other than ignore_index are skipped (they contribute nothing) and
// reported to the stream's device error record (`geometry` carries its address for the nll
// ops): the host raises IndexError("Target t is out of bounds.") at the next sync point.
//
// Margin losses (OP 12-15): contiguous x [N, C] (in0), int64 target (in1: [N] for
// multi_margin, [N, C] for multilabel), in2 = weight [C] (multi_margin, flag 1) or is_target
// [N, C] (multilabel), in3 = grad_output (backward: [N] with flag 4, else one element).
// numel = N (N C for the element-parallel OP 15), aux0 = C, P0 = margin, P1 = the gradient scale (1 / C, or 1 / (N C) for mean),
// mode flags: 1 weight, 2 p == 2, 4 per-row grad_output; pi = the stream's error record.
// Forward ops and multi_margin_bwd run one workgroup per row (a shared-memory tree sum); the
// per-row results are reduced by the caller. Out-of-range targets are reported
// (TVK_ERR_MULTI_MARGIN_TARGET_OUT_OF_RANGE: t outside [0, C);
// TVK_ERR_MULTILABEL_MARGIN_TARGET_OUT_OF_RANGE: any entry outside [-1, C)) and never used
// as an index: a multi_margin row with a bad target gives 0 (and a zero gradient row).
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
  uint64_t addr[6];    //   0: out, in0 .. in4
  uint64_t geometry;   //  48: LossGeometry (element-wise ops)
#if TVK_FLOAT64
  double pd[2];        //  56
#else
  uint64_t pd_bits[2];
#endif
  float pf[2];         //  72
  int64_t pi;          //  80: ignore_index (nll); the stream's error record (bce)
  int numel;           //  88
  int mode;            //  92: ndim (element-wise) or flags (nll)
  int dtype[6];        //  96
  int aux0;            // 120
  int aux1;            // 124
} pc;                  // 128 bytes

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer LossGeometry {
  int sizes[8];
  int strides[6][8];
};

#if KIND == KIND_FLOAT64
#define P0 pc.pd[0]
#define P1 pc.pd[1]
#else
#define P0 pc.pf[0]
#define P1 pc.pf[1]
#endif

T ld(int k, int i) { return LOAD_T(pc.addr[k], pc.dtype[k], i); }

#if OP < 10
// max / min that return a NaN operand (GLSL's max and min may return either operand for NaN;
// NVIDIA returns the other one) so that NaN inputs give NaN losses, as on the CPU.
T nan_max(T a, T b) { return tvk_isnan(a) ? a : max(a, b); }
T nan_min(T a, T b) { return tvk_isnan(a) ? a : min(a, b); }

T log_sigmoid(T x) { return nan_min(x, T(0)) - tvk_log1p(tvk_exp(-abs(x))); }

void element(uint e) {
  int o[6] = int[6](0, 0, 0, 0, 0, 0);
  if (pc.mode > 0) {
    LossGeometry g = LossGeometry(pc.geometry);
    uint rem = e;
    for (int d = 0; d < pc.mode; ++d) {
      uint size = uint(g.sizes[d]);
      uint q = rem / size;
      int idx = int(rem - q * size);
      rem = q;
      for (int k = 0; k < 6; ++k) o[k] += idx * g.strides[k][d];
    }
  }
  T r;
#if OP == 0
  T d = ld(1, o[1]) - ld(2, o[2]);
  r = d * d;
#elif OP == 1
  r = P1 * T(2) * (ld(2, o[2]) - ld(3, o[3])) * ld(1, o[1]);
#elif OP == 2
  T z = abs(ld(1, o[1]) - ld(2, o[2]));
  T beta = P0;
  r = z < beta ? T(0.5) * z * z / beta : z - T(0.5) * beta;
#elif OP == 3
  T x = ld(2, o[2]) - ld(3, o[3]);
  T g = ld(1, o[1]);
  T beta = P0, norm = P1;
  if (beta == T(0))  // the L1 gradient (sign(0) = 0)
    r = x < T(0) ? -norm * g : (x > T(0) ? norm * g : T(0) * g);
  else
    r = x <= -beta ? -norm * g : (x >= beta ? norm * g : norm * x * g / beta);
#elif OP == 4
  T z = abs(ld(1, o[1]) - ld(2, o[2]));
  T delta = P0;
  r = z < delta ? T(0.5) * z * z : delta * (z - T(0.5) * delta);
#elif OP == 5
  T x = ld(2, o[2]) - ld(3, o[3]);
  T g = ld(1, o[1]);
  T delta = P0, norm = P1;
  r = x <= -delta ? -norm * g * delta : (x >= delta ? norm * g * delta : norm * x * g);
#elif OP == 6
  T x = ld(1, o[1]), y = ld(2, o[2]);
  // The CPU refuses probabilities outside [0, 1] (NaN included): report to the error record
  // (its address in pc.pi) and compute on, the host raises at its next wait.
  if (tvk_isnan(x) || x < T(0) || x > T(1))
    tvk_report_index_error(uint64_t(pc.pi), TVK_ERR_BCE_INPUT_OUT_OF_RANGE, 0l, 0l);
  else if (tvk_isnan(y) || y < T(0) || y > T(1))
    tvk_report_index_error(uint64_t(pc.pi), TVK_ERR_BCE_TARGET_OUT_OF_RANGE, 0l, 0l);
  r = (y - T(1)) * nan_max(tvk_log1p(-x), T(-100)) - y * nan_max(tvk_log(x), T(-100));
  if ((pc.aux0 & 1) != 0) r *= ld(3, o[3]);
#elif OP == 7
  T g = ld(1, o[1]), x = ld(2, o[2]), y = ld(3, o[3]);
  r = g * (x - y) / nan_max((T(1) - x) * x, T(1e-12));
  if ((pc.aux0 & 1) != 0) r *= ld(4, o[4]);
  r *= P1;
#elif OP == 8
  T x = ld(1, o[1]), y = ld(2, o[2]);
  T ls = log_sigmoid(x);
  if ((pc.aux0 & 2) != 0) ls *= (ld(4, o[4]) - T(1)) * y + T(1);
  r = (T(1) - y) * x - ls;
  if ((pc.aux0 & 1) != 0) r *= ld(3, o[3]);
#endif
  STORE_T(pc.addr[0], pc.dtype[0], o[0], r);
}
#elif OP < 12
void nll_sample(uint i) {
  uint C = uint(pc.aux0), S = uint(pc.aux1);
  uint n = i / S, s = i - n * S;
  int64_t t = load_i64(pc.addr[2], pc.dtype[2], int(i));
  // min/max forms: Mesa 22.3 miscompiles some 64-bit comparisons against constants.
  bool in_range = min(t, 0l) == 0l && max(t, int64_t(C) - 1l) == int64_t(C) - 1l;
  bool valid = t != pc.pi && in_range;
  if (!in_range && t != pc.pi) tvk_report_index_error(pc.geometry, TVK_ERR_TARGET_OUT_OF_BOUNDS, t, int64_t(C));
  int x_index = int((n * C + uint(t)) * S + s);
  T w = valid ? ((pc.mode & 1) != 0 ? ld(3, int(t)) : T(1)) : T(0);
#if OP == 10
  T v = valid ? -w * ld(1, x_index) : T(0);
  if ((pc.mode & 2) != 0) {
    STORE_T(pc.addr[0], pc.dtype[0], int(i), v);
  } else {
    STORE_T(pc.addr[0], pc.dtype[0], int(i), v);
    STORE_T(pc.addr[0], pc.dtype[0], pc.numel + int(i), w);
  }
#else
  if (!valid) return;
  T g = (pc.mode & 2) != 0 ? ld(4, int(i)) : ld(4, 0);
  if ((pc.mode & 4) != 0) g = g / ld(5, 0);
  T grad = -g;
  STORE_T(pc.addr[0], pc.dtype[0], x_index, (pc.mode & 1) != 0 ? w * grad : grad);
#endif
}
#endif

#if OP >= 12 && OP < 16
// ---------------------------------------------------------------- margin losses
#define ROW_WG 256  // the launcher's workgroup size for these ops
shared T row_partial[ROW_WG];

// Sum of `v` over the workgroup (every invocation gets the result).
T workgroup_sum(T v) {
  uint l = gl_LocalInvocationID.x;
  row_partial[l] = v;
  barrier();
  for (uint half_size = ROW_WG / 2; half_size > 0; half_size >>= 1) {
    if (l < half_size) row_partial[l] += row_partial[l + half_size];
    barrier();
  }
  T r = row_partial[0];
  barrier();  // row_partial is reused by the next row
  return r;
}

int64_t target_at(int i) { return load_i64(pc.addr[2], pc.dtype[2], i); }

bool index_in(int64_t t, int64_t lo, int64_t hi) {
  // min/max forms: Mesa 22.3 miscompiles some 64-bit comparisons against constants.
  return max(t, lo) == t && min(t, hi - 1l) == t;
}

T grad_out_scale(uint n) { return ld(4, (pc.mode & 4) != 0 ? int(n) : 0); }

#if OP == 12 || OP == 13
void multi_margin_row(uint n) {
  int C = pc.aux0;
  int64_t t = target_at(int(n));
  bool ok = index_in(t, 0l, int64_t(C));
  if (!ok && gl_LocalInvocationID.x == 0)
    tvk_report_index_error(uint64_t(pc.pi), TVK_ERR_MULTI_MARGIN_TARGET_OUT_OF_RANGE, t, int64_t(C));
  int row = int(n) * C;
  int ti = ok ? int(t) : 0;
  T xt = ok ? ld(1, row + ti) : T(0);
  T wt = ok && (pc.mode & 1) != 0 ? ld(3, ti) : T(1);
  bool p2 = (pc.mode & 2) != 0;
#if OP == 13
  T g = P1 * grad_out_scale(n);
#endif
  T acc = T(0);
  for (int i = int(gl_LocalInvocationID.x); i < C; i += ROW_WG) {
    T h = T(0);
    if (ok && i != ti) {
      T z = P0 - xt + ld(1, row + i);
      if (z > T(0)) {
#if OP == 12
        h = (p2 ? z * z : z) * wt;
#else
        h = (p2 ? T(2) * z : T(1)) * wt * g;
#endif
      }
    }
    acc += h;
#if OP == 13
    if (i != ti || !ok) STORE_T(pc.addr[0], pc.dtype[0], row + i, h);
#endif
  }
  T total = workgroup_sum(acc);
  if (gl_LocalInvocationID.x == 0) {
#if OP == 12
    STORE_T(pc.addr[0], pc.dtype[0], int(n), total / T(C));
#else
    if (ok) STORE_T(pc.addr[0], pc.dtype[0], row + ti, -total);
#endif
  }
}
#endif

#if OP == 14
// Split (devices with a loop limit): with geometry = j_begin | j_end << 32 != 0 a pass walks
// only the target positions [j_begin, j_end). addr[4] holds T s [N, C] (each element's hinge
// sum so far), addr[5] this pass's int32 [N] row flags (1: the target list ended before
// j_begin; written for the next pass at addr[5] + 4 N); is_target accumulates in its output.
// Passes before the last store no loss.
void multilabel_margin_row(uint n) {
  int C = pc.aux0;
  int row = int(n) * C;
  const bool split = pc.geometry != 0ul;
  const int j_begin = split ? int(uint(pc.geometry & 0xfffffffful)) : 0;
  const int j_end = split ? min(C, int(uint(pc.geometry >> 32))) : C;
  const bool last_pass = j_end >= C;
  const int acc_dt = KIND == KIND_FLOAT64 ? DT_FLOAT64 : DT_FLOAT32;
  const bool ended_before = split && j_begin > 0 && RefI32(tvk_elem_addr(pc.addr[5], int(n), 2)).v != 0;
  bool ended_here = false;
  T acc = T(0);
  for (int i = int(gl_LocalInvocationID.x); i < C; i += ROW_WG) {
    int64_t own = target_at(row + i);  // every entry is range-checked, as on the CPU
    if (!index_in(own, -1l, int64_t(C)) && j_begin == 0)
      tvk_report_index_error(uint64_t(pc.pi), TVK_ERR_MULTILABEL_MARGIN_TARGET_OUT_OF_RANGE, own, int64_t(C));
    T xi = ld(1, row + i);
    bool is_target = false;
    T s = T(0);
    if (split && j_begin > 0) {
      is_target = ld(3, row + i) != T(0);
      s = LOAD_T(pc.addr[4], acc_dt, row + i);
    }
    for (int j = ended_before ? j_end : j_begin; j < j_end; ++j) {
      int64_t t = target_at(row + j);
      if (t < 0l) {
        ended_here = true;
        break;
      }
      if (!index_in(t, 0l, int64_t(C))) continue;  // reported by its own invocation
      if (int(t) == i) is_target = true;
      T z = T(1) - ld(1, row + int(t)) + xi;
      if (z > T(0)) s += z;
    }
    STORE_T(pc.addr[3], pc.dtype[3], row + i, is_target ? T(1) : T(0));
    if (split && !last_pass) STORE_T(pc.addr[4], acc_dt, row + i, s);
    if (!is_target) acc += s;
  }
  if (split && !last_pass) {
    // Every invocation that walked the list saw the same end; those with no i (C < ROW_WG)
    // walked nothing, so invocation 0 (which has i = 0) decides.
    if (gl_LocalInvocationID.x == 0)
      RefI32(tvk_elem_addr(pc.addr[5], pc.numel + int(n), 2)).v = (ended_before || ended_here) ? 1 : 0;
    return;
  }
  T total = workgroup_sum(acc);
  if (gl_LocalInvocationID.x == 0) STORE_T(pc.addr[0], pc.dtype[0], int(n), total / T(C));
}
#endif

#if OP == 15
// grad_input[n, i] = g (#{j < L: i not a target, 1 - x[t_j] + x[i] > 0}
//                       - #{j < L: t_j = i} #{d not a target: 1 - x[i] + x[d] > 0}),
// "target" as given by is_target (the forward's output), as the CPU does.
void multilabel_margin_backward_element(uint e) {
  int C = pc.aux0;
  uint n = e / uint(C);
  int i = int(e - n * uint(C));
  int row = int(n) * C;
  int64_t own = target_at(row + i);
  if (!index_in(own, -1l, int64_t(C)))
    tvk_report_index_error(uint64_t(pc.pi), TVK_ERR_MULTILABEL_MARGIN_TARGET_OUT_OF_RANGE, own, int64_t(C));
  T xi = ld(1, row + i);
  bool non_target = ld(3, row + i) == T(0);
  T above = T(0);  // hinge terms where i is the non-target
  int multiplicity = 0;
  for (int j = 0; j < C; ++j) {
    int64_t t = target_at(row + j);
    if (t < 0l) break;
    if (!index_in(t, 0l, int64_t(C))) continue;
    if (int(t) == i) ++multiplicity;
    if (non_target && T(1) - ld(1, row + int(t)) + xi > T(0)) above += T(1);
  }
  T below = T(0);  // hinge terms where i is the target
  if (multiplicity > 0) {
    for (int d = 0; d < C; ++d)
      if (ld(3, row + d) == T(0) && T(1) - xi + ld(1, row + d) > T(0)) below += T(1);
  }
  T g = P1 * grad_out_scale(n);
  STORE_T(pc.addr[0], pc.dtype[0], row + i, g * (above - T(multiplicity) * below));
}
#endif
#endif  // OP >= 12 && OP < 16

#if OP >= 16
// ---------------------------------------------------------------- CTC loss
// Operands: log_probs [T, N, C] contiguous (in0 = addr[1]), targets (addr[2], Int32 / Int64,
// each sample's labels contiguous from its offset), meta (addr[3], Int64 [3, N]: input length,
// target length, target offset). numel = N (ctc_alpha / ctc_beta: one workgroup per sample) or
// T N C (ctc_grad), aux0 = C, aux1 = T, pi = blank, mode = S << 1 | zero_infinity with
// S = 2 max_target_length + 1.
//   ctc_alpha: addr[0] = log_alpha [N, T, S], addr[4] = nll [N].
//   ctc_beta:  addr[0] = log_beta [N, T, S].
//   ctc_grad:  addr[0] = grad [T, N, C], addr[4] = [log_alpha; log_beta] [2, N, T, S],
//              addr[5] = [nll; grad_output] [2, N].
// ctc_alpha / ctc_beta cover the time steps [t_begin, t_end) with geometry = t_begin |
// t_end << 32 (0: all of them): under a device loop limit the launcher splits the time loop
// over dispatches (alpha: ascending chunks, nll written by the last one; beta: descending),
// each chunk's first step reading the row the previous dispatch wrote.
// Entries outside each sample's lengths are -inf (log_alpha / log_beta) or 0 (grad). Labels
// outside [0, C) have probability 0 (never read). The recursions read the previous row written
// by other invocations of the workgroup: the rows are accessed through a coherent reference and
// every step ends with a buffer memory barrier and a workgroup barrier.
#define CTC_WG 256  // the launcher's workgroup size
#if TVK_FLOAT64
#define NEG_INF (-TVK_F64_INF)
layout(buffer_reference, std430, buffer_reference_align = 8) coherent buffer CtcRows { double v[]; };
#else
#define NEG_INF (-TVK_F32_INF)
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer CtcRows { float v[]; };
#endif

int ctc_batch() { return OP == 18 ? pc.numel / (pc.aux1 * pc.aux0) : pc.numel; }
int ctc_meta(int k, int b) { return int(load_i64(pc.addr[3], pc.dtype[3], k * ctc_batch() + b)); }

bool index_in_range(int64_t t, int64_t n) { return max(t, 0l) == t && min(t, n - 1l) == t; }

// Label of extended position s (blanks between and around the labels), -1 if out of range.
int ctc_label(int s, int offset) {
  if ((s & 1) == 0) return int(pc.pi);
  int64_t l = load_i64(pc.addr[2], pc.dtype[2], offset + (s >> 1));
  return index_in_range(l, int64_t(pc.aux0)) ? int(l) : -1;
}

T ctc_lp(int t, int b, int c) {
  return c < 0 ? NEG_INF : ld(1, (t * ctc_batch() + b) * pc.aux0 + c);
}

// log(exp(a) + exp(b) + exp(c)) as the CPU computes it (max shift, -inf safe).
T log_sum3(T a, T b, T c) {
  T m = max(a, max(b, c));
  if (m == NEG_INF) m = T(0);
  return tvk_log(tvk_exp(a - m) + tvk_exp(b - m) + tvk_exp(c - m)) + m;
}

#if OP == 16 || OP == 17
void ctc_recursion(int b) {
  int Tm = pc.aux1, S = pc.mode >> 1;
  int input_length = ctc_meta(0, b), target_length = ctc_meta(1, b), offset = ctc_meta(2, b);
  int Sb = 2 * target_length + 1;
  CtcRows rows = CtcRows(pc.addr[0]);
  int base = b * Tm * S;
  int lid = int(gl_LocalInvocationID.x);
  int t_begin = 0, t_end = Tm;
  if (pc.geometry != 0ul) {
    t_begin = int(uint(pc.geometry & 0xfffffffful));
    t_end = int(uint(pc.geometry >> 32));
  }
#if OP == 16
  for (int t = t_begin; t < t_end; ++t) {
    for (int s = lid; s < S; s += CTC_WG) {
      T v = NEG_INF;
      if (t < input_length && s < Sb) {
        int label = ctc_label(s, offset);
        if (t == 0) {
          if (s <= 1) v = ctc_lp(0, b, label);
        } else {
          int prev = base + (t - 1) * S;
          T a1 = rows.v[prev + s];
          T a2 = s > 0 ? rows.v[prev + s - 1] : NEG_INF;
          T a3 = s > 1 && ctc_label(s - 2, offset) != label ? rows.v[prev + s - 2] : NEG_INF;
          v = log_sum3(a1, a2, a3) + ctc_lp(t, b, label);
        }
      }
      rows.v[base + t * S + s] = v;
    }
    memoryBarrierBuffer();
    barrier();
  }
  if (lid == 0 && t_end == Tm) {
    T nll;
    if (input_length == 0) {
      nll = target_length == 0 ? T(0) : -NEG_INF;
    } else {
      int last = base + (input_length - 1) * S;
      T l1 = rows.v[last + 2 * target_length];
      T l2 = target_length > 0 ? rows.v[last + 2 * target_length - 1] : NEG_INF;
      nll = -log_sum3(l1, l2, NEG_INF);
    }
    STORE_T(pc.addr[4], pc.dtype[4], b, nll);
  }
  barrier();
#else
  for (int t = t_end - 1; t >= t_begin; --t) {
    for (int s = lid; s < S; s += CTC_WG) {
      T v = NEG_INF;
      if (t < input_length && s < Sb) {
        int label = ctc_label(s, offset);
        if (t == input_length - 1) {
          if (s >= Sb - 2) v = ctc_lp(t, b, label);
        } else {
          int next = base + (t + 1) * S;
          T b1 = rows.v[next + s];
          T b2 = s < Sb - 1 ? rows.v[next + s + 1] : NEG_INF;
          T b3 = s < Sb - 2 && ctc_label(s + 2, offset) != label ? rows.v[next + s + 2] : NEG_INF;
          v = log_sum3(b1, b2, b3) + ctc_lp(t, b, label);
        }
      }
      rows.v[base + t * S + s] = v;
    }
    memoryBarrierBuffer();
    barrier();
  }
#endif
}
#endif

#if OP == 18
void ctc_grad_element(uint e) {
  int C = pc.aux0, Tm = pc.aux1, N = ctc_batch(), S = pc.mode >> 1;
  int c = int(e % uint(C));
  int tb = int(e / uint(C));
  int b = tb % N, t = tb / N;
  int input_length = ctc_meta(0, b), target_length = ctc_meta(1, b), offset = ctc_meta(2, b);
  T nll = ld(5, b), gr = ld(5, N + b);
  T r = T(0);
  bool zeroed = (pc.mode & 1) != 0 && nll == -NEG_INF;
  if (t < input_length && !zeroed) {
    int row = (b * Tm + t) * S, beta = N * Tm * S;
    T lcab = NEG_INF;
    for (int s = 0; s < 2 * target_length + 1; ++s) {
      if (ctc_label(s, offset) != c) continue;
      T v = ld(4, row + s) + ld(4, beta + row + s);
      if (lcab == NEG_INF) {
        lcab = v;
      } else {
        T m = max(lcab, v);
        lcab = tvk_log(tvk_exp(lcab - m) + tvk_exp(v - m)) + m;
      }
    }
    T lp = ctc_lp(t, b, c);
    r = (tvk_exp(lp) - tvk_exp(lcab + nll - lp)) * gr;
  }
  STORE_T(pc.addr[0], pc.dtype[0], int(e), r);
}
#endif
#endif  // OP >= 16

void main() {
#if OP == 12 || OP == 13 || OP == 14 || OP == 16 || OP == 17
  // One workgroup per row (sample).
  for (uint n = gl_WorkGroupID.x; n < uint(pc.numel); n += gl_NumWorkGroups.x) {
#if OP == 14
    multilabel_margin_row(n);
#elif OP >= 16
    ctc_recursion(int(n));
#else
    multi_margin_row(n);
#endif
  }
#else
  uint n = uint(pc.numel);
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < n; e += step) {
#if OP < 10
    element(e);
#elif OP < 12
    nll_sample(e);
#elif OP == 15
    multilabel_margin_backward_element(e);
#else
    ctc_grad_element(e);
#endif
  }
#endif
}
