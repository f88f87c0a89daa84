#version 460
// Searching sorted sequences and counting: searchsorted / bucketize, isin, histc.
//
// Built per (op, kind) by tools/build_shaders.py (search.variants.toml); KIND as in
// common.glsl is the comparison type: float32 for float16 / bfloat16 / float32 (exact
// widening), int64 for every integer dtype, float64 (shaderFloat64 only).
//
// OP 0: one binary search per element q in [0, numel) of the contiguous input `in`, in the
//   contiguous sorted rows of `bd`: row q / idim_in of idim_bd elements (bit 1 of flags: one
//   row, bd is 1-D and shared by every element).
//   searchsorted (bit 3 clear): the CPU's lower / upper bound (bit 0 = right), comparing as
//     `!(mid >= v)` / `!(mid > v)` so that NaN behaves as on the CPU; with a sorter (bit 2)
//     the row's k-th element is bd[row_start + sorter[row_start + k]] (sorter int64, laid out
//     like bd, entries in [0, idim_bd): checked by the host). Writes the position in the row
//     to out (int32 or int64, out_dtype).
//   isin (bit 3 set): bd is one ascending row sorted with NaN last (the sort kernel's order);
//     out[q] (bool) = whether in[q] equals some element of the row, XOR invert (bit 4). NaN
//     equals nothing; -0.0 equals 0.0.
// OP 1: histc: counts[b] += 1 (uint32 atomics) for every element of `in` in [left, right],
//   b = int((x - left) * bins / (right - left)) computed in the input dtype's arithmetic
//   (float16 / bfloat16 round after every operation, float32 divides correctly rounded, as
//   the CPU's LINEAR_INTERPOLATION histogram), b == bins -> bins - 1. NaN and values outside
//   the range are skipped. left / right are the input dtype's values (bits in push
//   constants: float bits in the low word for KIND float32, double bits for float64).
//   Integer inputs (KIND int64, CUDA's behaviour: the CPU's histc takes floats only) bin in
//   int64 arithmetic; left / right are then int64 values.
//   Each workgroup counts into shared memory first when bins <= HIST_SHARED_BINS.
// Grid: 1-D, any number of workgroups (loops cover the rest).
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

#if T_IS_FLOAT
bool s_isnan(T x) { return tvk_isnan(x); }
#else
bool s_isnan(T x) { return false; }
#endif

#if OP == 0
#define FLAG_RIGHT 1
#define FLAG_1D 2
#define FLAG_SORTER 4
#define FLAG_ISIN 8
#define FLAG_INVERT 16

layout(push_constant) uniform Push {
  uint64_t in_addr;      //  0
  uint64_t bd_addr;      //  8
  uint64_t sorter_addr;  // 16
  uint64_t out_addr;     // 24
  int numel;             // 32
  int idim_in;           // 36
  int idim_bd;           // 40
  int flags;             // 44
  int in_dtype;          // 48: dtype of in and bd
  int out_dtype;         // 52
} pc;                    // 56 bytes

T bd_at(int row_start, int k) {
  if ((pc.flags & FLAG_SORTER) != 0)
    k = int(load_i64(pc.sorter_addr, DT_INT64, row_start + k));
  return LOAD_T(pc.bd_addr, pc.in_dtype, row_start + k);
}

void main() {
  uint numel = uint(pc.numel);
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  int n = pc.idim_bd;
  bool right = (pc.flags & FLAG_RIGHT) != 0;
  for (uint q = gl_GlobalInvocationID.x; q < numel; q += step) {
    T v = LOAD_T(pc.in_addr, pc.in_dtype, int(q));
    int row_start = (pc.flags & FLAG_1D) != 0 ? 0 : int(q / uint(pc.idim_in)) * n;
    int lo = 0, hi = n;
    if ((pc.flags & FLAG_ISIN) != 0) {
      bool found = false;
      if (!s_isnan(v)) {
        // First position whose element is not below v (NaN sorts above every number).
        while (lo < hi) {
          int mid = lo + ((hi - lo) >> 1);
          T m = LOAD_T(pc.bd_addr, pc.in_dtype, mid);
          if (!s_isnan(m) && m < v) lo = mid + 1; else hi = mid;
        }
        found = lo < n && LOAD_T(pc.bd_addr, pc.in_dtype, lo) == v;
      }
      store_i64(pc.out_addr, DT_BOOL, int(q), found != ((pc.flags & FLAG_INVERT) != 0) ? 1l : 0l);
      continue;
    }
    while (lo < hi) {
      int mid = lo + ((hi - lo) >> 1);
      T m = bd_at(row_start, mid);
      bool go_right = right ? !(m > v) : !(m >= v);
      if (go_right) lo = mid + 1; else hi = mid;
    }
    store_i64(pc.out_addr, pc.out_dtype, int(q), int64_t(lo));
  }
}

#else  // OP == 1: histc
#define HIST_SHARED_BINS 2048

layout(buffer_reference, std430, buffer_reference_align = 4) buffer CountRef { uint v; };

layout(push_constant) uniform Push {
  uint64_t in_addr;      //  0
  uint64_t counts_addr;  //  8: uint32 per bin, zeroed by the host
  uint64_t left_bits;    // 16
  uint64_t right_bits;   // 24
  int numel;             // 32
  int bins;              // 36
  int in_dtype;          // 40
  int use_shared;        // 44: bins <= HIST_SHARED_BINS
} pc;                    // 48 bytes

shared uint s_counts[HIST_SHARED_BINS];

#if !T_IS_FLOAT
// Integer inputs (CUDA's histc; the CPU has none): bins in int64 arithmetic, as CUDA's
// getBin computes them in the accumulate type: (x - left) * bins / (right - left), truncated.
T from_bits(uint64_t b) { return T(int64_t(b)); }
T bin_of(T x, T left, T right) { return (x - left) * T(pc.bins) / (right - left); }
#elif KIND == 3
T from_bits(uint64_t b) { return uint64BitsToDouble(b); }
T bin_of(T x, T left, T right) {
  precise T num = (x - left) * T(pc.bins);
  return num / (right - left);
}
#else
T from_bits(uint64_t b) { return uintBitsToFloat(uint(b)); }
T bin_of(T x, T left, T right) {
  int dt = pc.in_dtype;
  precise float d = tvk_round_to_dtype(x - left, dt);
  precise float num = tvk_round_to_dtype(d * tvk_round_to_dtype(float(pc.bins), dt), dt);
  precise float den = tvk_round_to_dtype(right - left, dt);
  return tvk_round_to_dtype(tvk_div_rn(num, den), dt);
}
#endif

void main() {
  const T left = from_bits(pc.left_bits), right = from_bits(pc.right_bits);
  const bool use_shared = pc.use_shared != 0;
  uint lid = gl_LocalInvocationID.x;
  if (use_shared) {
    for (uint b = lid; b < uint(pc.bins); b += gl_WorkGroupSize.x) s_counts[b] = 0u;
    barrier();
  }
  uint numel = uint(pc.numel);
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < numel; q += step) {
    T x = LOAD_T(pc.in_addr, pc.in_dtype, int(q));
    if (!(x >= left && x <= right)) continue;  // NaN and out-of-range values
    int b = int(bin_of(x, left, right));
    b = clamp(b, 0, pc.bins - 1);  // b == bins: the last bin holds its right edge
    if (use_shared)
      atomicAdd(s_counts[b], 1u);
    else
      atomicAdd(CountRef(pc.counts_addr + 4ul * uint64_t(b)).v, 1u);
  }
  if (use_shared) {
    barrier();
    for (uint b = lid; b < uint(pc.bins); b += gl_WorkGroupSize.x) {
      uint c = s_counts[b];
      if (c != 0u) atomicAdd(CountRef(pc.counts_addr + 4ul * uint64_t(b)).v, c);
    }
  }
}
#endif
