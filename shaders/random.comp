#version 460
// Random numbers on the device: counter-based Philox4x32-10 (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC'11), the distributions built on it, dropout, and the
// pieces of randperm / multinomial (random sort keys, a bitonic sort of (key, value) rows,
// sampling from a CDF, a probability check).
//
// Reproducibility contract: the numbers of the element with logical (row-major) index e are
// philox(counter = (e, row_hi, c0 + b, c0_hi), key = seed) for blocks b = 0, 1, ... where
// (seed, c0 = offset / 4) come from the generator (src/aten/generator.h). They depend only on
// (seed, offset, e): not on strides, workgroup size or grid size.
//
// Ops (OP define; src/kernels/random.h documents each one's operands):
//   0 uniform   1 normal   2 bernoulli (scalar p, or p tensor = in0, checked)   3 random integers
//   4 exponential   5 geometric   6 log_normal   7 cauchy
//   8 dropout (in0 = x, in1 = mask out)   9 masked scale (out = in0 * in1 * scale)
//  10 randperm keys   11 multinomial keys (without replacement)   12 local bitonic sort
//  13 global bitonic step   14 gather sorted values   15 multinomial with replacement (CDF)
//  16 probability check
// KIND selects the math precision (float32 / float64; int64 for random integers); the stored
// dtypes come from the push constants or specialization constants.
//
// ABI (mirrored by RandomPush in src/kernels/random.cpp): see `Push`. Element-wise ops walk
// `numel` elements with a grid-stride loop; with ndim >= 2, `geometry` points to a block of
// int32 sizes[8] and strides[3][8] (dim 0 fastest, operand 0 = out, 1 = in0, 2 = in1).
// Specialization constants: 0 = local_size_x, 1..3 = dtype of out, in0, in1 (-1: push),
// 4 = Philox source: 0 key = seed and counter = offset / 4 in the push constants; 1 (kernels
// captured in a graph) key = the address of a 16-byte block {seed, counter base} that each
// replay rewrites, counter = the kernel's delta to that base.
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
layout(constant_id = 1) const int SPEC_DT0 = -1;
layout(constant_id = 2) const int SPEC_DT1 = -1;
layout(constant_id = 3) const int SPEC_DT2 = -1;
layout(constant_id = 4) const int SPEC_PHILOX_BLOCK = 0;

layout(push_constant) uniform Push {
  uint64_t addr[3];    //   0: out, in0, in1
  uint64_t geometry;   //  24: RandomGeometry (ndim >= 2) or 0
  uvec2 key;           //  32: philox key (the seed)
  uvec2 counter;       //  40: philox counter words 2, 3 (offset / 4)
#if TVK_FLOAT64
  double pd[2];        //  48: float parameters (float64 kind)
#else
  uint64_t pd_bits[2];
#endif
  int64_t pi[2];       //  64: integer parameters (bernoulli with a p tensor: pi[0] is
                       //      the stream's error record)
  float pf[2];         //  80: float parameters (float32 kind)
  int numel;           //  88
  int ndim;            //  92
  int dtype[3];        //  96
  int stride0[3];      // 108
  int aux0;            // 120
  int aux1;            // 124
} pc;                  // 128 bytes

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer RandomGeometry {
  int sizes[8];
  int strides[3][8];
};

layout(buffer_reference, std430, buffer_reference_align = 8) buffer KeyArray { uint64_t k[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer IntArray { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer FlagWord { uint bits; };

#if KIND == KIND_FLOAT64
#define T_MAX 1.7976931348623157e308lf
#define P0 pc.pd[0]
#define P1 pc.pd[1]
#else
#define T_MAX 3.4028234663852886e38
#define P0 pc.pf[0]
#define P1 pc.pf[1]
#endif

// ---------------------------------------------------------------- Philox4x32-10
#include "philox.glsl"

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer PhiloxBlock {
  uvec2 seed;
  uvec2 counter;
};

// Block `b` of the numbers of element `e` (see the contract at the top).
uvec4 draw(uint e, uint b) {
  uvec2 key = pc.key, counter = pc.counter;
  if (SPEC_PHILOX_BLOCK != 0) {
    PhiloxBlock block = PhiloxBlock(packUint2x32(pc.key));
    key = block.seed;
    uint lo = block.counter.x + pc.counter.x;
    counter = uvec2(lo, block.counter.y + pc.counter.y + (lo < pc.counter.x ? 1u : 0u));
  }
  uint c2 = counter.x + b;
  uint c3 = counter.y + (c2 < b ? 1u : 0u);
  return philox(uvec4(e, 0u, c2, c3), key);
}

// Uniform in [0, 1) (24 bits) and in (0, 1) (24 bits, centred).
float u01(uint x) { return float(x >> 8) * 5.9604644775390625e-8; }
float u01_open(uint x) { return (float(x >> 8) + 0.5) * 5.9604644775390625e-8; }
#if TVK_FLOAT64
double d01(uint hi, uint lo) {
  return double((uint64_t(hi) << 21) | uint64_t(lo >> 11)) * 1.1102230246251565e-16lf;
}
double d01_open(uint hi, uint lo) {
  return (double((uint64_t(hi) << 21) | uint64_t(lo >> 11)) + 0.5lf) * 1.1102230246251565e-16lf;
}
#endif

#if T_IS_FLOAT
// Uniform [0, 1) / (0, 1) in the compute precision from one block.
T uni(uvec4 r) {
#if KIND == KIND_FLOAT64
  return d01(r.x, r.y);
#else
  return u01(r.x);
#endif
}
T uni_open(uvec4 r) {
#if KIND == KIND_FLOAT64
  return d01_open(r.x, r.y);
#else
  return u01_open(r.x);
#endif
}
// A standard normal from one block (Box-Muller).
T std_normal(uvec4 r) {
#if KIND == KIND_FLOAT64
  T u1 = d01_open(r.x, r.y), u2 = d01(r.z, r.w);
  return sqrt(-2.0lf * tvk_log(u1)) * tvk_cos(6.283185307179586lf * u2);
#else
  T u1 = u01_open(r.x), u2 = u01(r.y);
  return sqrt(-2.0 * tvk_log(u1)) * tvk_cos(6.283185307179586 * u2);
#endif
}
#endif

int g_dt0, g_dt1, g_dt2;

// Element offsets of operands 0..2 for the logical index e.
ivec3 offsets(uint e) {
  if (pc.ndim <= 1) return ivec3(int(e)) * ivec3(pc.stride0[0], pc.stride0[1], pc.stride0[2]);
  RandomGeometry g = RandomGeometry(pc.geometry);
  ivec3 o = ivec3(0);
  uint rem = e;
  for (int d = 0; d < pc.ndim; ++d) {
    uint size = uint(g.sizes[d]);
    uint q = rem / size;
    int idx = int(rem - q * size);
    rem = q;
    o += idx * ivec3(g.strides[0][d], g.strides[1][d], g.strides[2][d]);
  }
  return o;
}

#if OP <= 9
// ---------------------------------------------------------------- element-wise ops
#if OP == 0 && T_IS_FLOAT
// The value as the output dtype will store it (float16 / bfloat16 round), so that the
// [from, to) bound can be checked after rounding (a value that rounds to `to` becomes `from`).
T rounded(T v) {
  if (g_dt0 == DT_FLOAT16) return T(tvk_half_to_float(tvk_float_to_half(float(v))));
  if (g_dt0 == DT_BFLOAT16) return T(tvk_bf16_to_float(tvk_float_to_bf16(float(v))));
  if (g_dt0 == DT_FLOAT32) return T(float(v));
  return v;
}
#endif

void element(uint e) {
  ivec3 o = offsets(e);
#if OP == 9
  // x * mask * scale, as the CPU computes it (so NaN * 0 stays NaN).
  T x = LOAD_T(pc.addr[1], g_dt1, o.y);
  T m = LOAD_T(pc.addr[2], g_dt2, o.z);
  STORE_T(pc.addr[0], g_dt0, o.x, x * m * P1);
#elif OP == 3
  // from + r % range (32-bit r when range < 2^32, as the CPU); range 0 means 2^64.
  uvec4 r = draw(e, 0u);
  uint64_t range = uint64_t(pc.pi[1]);
  uint64_t v;
  if (range == 0ul) {
    v = (uint64_t(r.x) << 32) | uint64_t(r.y);
  } else if (range >= (1ul << 32)) {
    v = ((uint64_t(r.x) << 32) | uint64_t(r.y)) % range;
  } else {
    v = uint64_t(r.x % uint(range));
  }
  STORE_T(pc.addr[0], g_dt0, o.x, int64_t(v) + pc.pi[0]);
#else
  uvec4 r = draw(e, 0u);
#if OP == 0
  T from = P0, to = P1;
  T v = rounded(uni(r) * (to - from) + from);
  STORE_T(pc.addr[0], g_dt0, o.x, v >= to ? from : v);
#elif OP == 1
  STORE_T(pc.addr[0], g_dt0, o.x, std_normal(r) * P1 + P0);
#elif OP == 2
  T p = P0;
  if (pc.aux0 != 0) {
    // A probability tensor: the CPU refuses values outside [0, 1] (NaN included). Report to
    // the stream's error record (address in pc.pi[0]; the host raises at its next wait) and
    // compute on with the comparison below (p > 1 gives 1, p < 0 and NaN give 0).
    p = LOAD_T(pc.addr[1], g_dt1, o.y);
    if (!(p >= T(0) && p <= T(1)))
      tvk_report_index_error(uint64_t(pc.pi[0]), TVK_ERR_BERNOULLI_P_OUT_OF_RANGE, 0l, 0l);
  }
  STORE_T(pc.addr[0], g_dt0, o.x, uni(r) < p ? T(1) : T(0));
#elif OP == 4
  // -log(u) / lambda with u in (0, 1): finite and > 0.
  STORE_T(pc.addr[0], g_dt0, o.x, -tvk_log(uni_open(r)) / P0);
#elif OP == 5
  // ceil(log(u) / log(1 - p)) >= 1 (P1 holds log1p(-p)).
  STORE_T(pc.addr[0], g_dt0, o.x, max(ceil(tvk_log(uni_open(r)) / P1), T(1)));
#elif OP == 6
  STORE_T(pc.addr[0], g_dt0, o.x, tvk_exp(std_normal(r) * P1 + P0));
#elif OP == 7
  STORE_T(pc.addr[0], g_dt0, o.x, P0 + P1 * tvk_tan(T(3.14159265358979323846) * (uni_open(r) - T(0.5))));
#elif OP == 8
  // P0 = probability of keeping, P1 = 1 / (1 - p).
  bool keep = uni(r) < P0;
  T x = LOAD_T(pc.addr[1], g_dt1, o.y);
  STORE_T(pc.addr[0], g_dt0, o.x, x * (keep ? T(1) : T(0)) * P1);
  store_i32(pc.addr[2], g_dt2, o.z, keep ? 1 : 0);
#endif
#endif
}
#endif

#if OP == 12 || OP == 13
// ---------------------------------------------------------------- bitonic sort
// Rows of P = 2^aux0 (key, value) pairs, stored contiguously (keys: addr[1], values:
// addr[2]); each row is sorted ascending by key. pc.numel = rows * P (a power of two or a
// multiple of P). Pair (i, i ^ j) is ordered ascending when (i mod P) & k == 0.
bool ascending(uint i, uint k) { return ((i & ((1u << pc.aux0) - 1u)) & k) == 0u; }

#if OP == 12
// Sorts stages k in [pc.pi[0], pc.pi[1]] with j < block size in shared memory; blocks of
// 2 * local_size elements. For k larger than the block, only the j < block steps run (merge).
shared uint64_t s_key[gl_WorkGroupSize.x * 2];
shared int s_val[gl_WorkGroupSize.x * 2];

void main() {
  KeyArray keys = KeyArray(pc.addr[1]);
  IntArray vals = IntArray(pc.addr[2]);
  uint block = gl_WorkGroupSize.x * 2u;
  uint n = uint(pc.numel);
  uint lid = gl_LocalInvocationID.x;
  for (uint base = gl_WorkGroupID.x * block; base < n; base += gl_NumWorkGroups.x * block) {
    for (uint t = lid; t < block; t += gl_WorkGroupSize.x) {
      uint i = base + t;
      s_key[t] = i < n ? keys.k[i] : ~0ul;
      s_val[t] = i < n ? vals.v[i] : 0;
    }
    barrier();
    for (uint k = uint(pc.pi[0]); k <= uint(pc.pi[1]); k <<= 1) {
      for (uint j = min(k, block) >> 1; j > 0u; j >>= 1) {
        uint a = 2u * j * (lid / j) + (lid % j);  // the pair (a, a + j), a's bit j clear
        uint b = a + j;
        bool up = ascending(base + a, k);
        uint64_t ka = s_key[a], kb = s_key[b];
        if ((ka > kb) == up && ka != kb) {
          s_key[a] = kb;
          s_key[b] = ka;
          int va = s_val[a];
          s_val[a] = s_val[b];
          s_val[b] = va;
        }
        barrier();
      }
    }
    for (uint t = lid; t < block; t += gl_WorkGroupSize.x) {
      uint i = base + t;
      if (i < n) {
        keys.k[i] = s_key[t];
        vals.v[i] = s_val[t];
      }
    }
    barrier();
  }
}
#else
// One step (k = pi[0], j = pi[1]) over the whole array: one invocation per pair.
void main() {
  KeyArray keys = KeyArray(pc.addr[1]);
  IntArray vals = IntArray(pc.addr[2]);
  uint k = uint(pc.pi[0]), j = uint(pc.pi[1]);
  uint pairs = uint(pc.numel) >> 1;
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < pairs; q += step) {
    uint a = 2u * j * (q / j) + (q % j);
    uint b = a + j;
    uint64_t ka = keys.k[a], kb = keys.k[b];
    if ((ka > kb) == ascending(a, k) && ka != kb) {
      keys.k[a] = kb;
      keys.k[b] = ka;
      int va = vals.v[a];
      vals.v[a] = vals.v[b];
      vals.v[b] = va;
    }
  }
}
#endif

#else
// ---------------------------------------------------------------- one item per invocation
// Order-preserving map of a float to uint (ascending).
uint float_order(float f) {
  uint b = floatBitsToUint(f);
  return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}

void item(uint e) {
#if OP == 10
  // Key of slot e of the padded randperm array (aux1 = n): random 64 bits for e < n, the
  // maximum (sorts last) for padding; the value is the index.
  uint64_t key = ~0ul;
  if (e < uint(pc.aux1)) {
    uvec4 r = draw(e, 0u);
    key = (uint64_t(r.x) << 32) | uint64_t(r.y);
    if (key == ~0ul) key = ~0ul - 1ul;
  }
  KeyArray(pc.addr[1]).k[e] = key;
  IntArray(pc.addr[2]).v[e] = int(e & ((1u << pc.aux0) - 1u));
#elif OP == 11
  // Multinomial without replacement ("exponential race": the categories sorted by p / E with
  // E ~ Exp(1)). Slot e = row * P + c; probabilities are contiguous rows of aux1 categories at
  // addr[0]. Key: the descending order of log(p) - log(E), then the category.
  uint P = 1u << pc.aux0;
  uint row = e >> pc.aux0, c = e & (P - 1u);
  uint64_t key = ~0ul;
  if (c < uint(pc.aux1)) {
    T p = LOAD_T(pc.addr[0], g_dt0, int(row * uint(pc.aux1) + c));
    uvec4 r = draw(e, 0u);
    float score = float(tvk_log(p)) - tvk_log(-tvk_log(u01_open(r.x)));
    key = (uint64_t(~float_order(score)) << 32) | uint64_t(c);
  }
  KeyArray(pc.addr[1]).k[e] = key;
  IntArray(pc.addr[2]).v[e] = int(c);
#elif OP == 14
  // out[e] = values[row * P + s] for e = row * aux1 + s (out strided by the geometry).
  uint row = e / uint(pc.aux1), s = e - row * uint(pc.aux1);
  int v = IntArray(pc.addr[1]).v[(row << pc.aux0) + s];
  store_i64(pc.addr[0], g_dt0, offsets(e).x, int64_t(v));
#elif OP == 15
  // Sample s of row `row` (e = row * aux1 + s) from the inclusive CDF rows at addr[1]
  // (aux0 categories, compute dtype): the first category whose CDF exceeds u * total.
  // Categories with probability 0 never qualify (their CDF equals the previous one).
  uint ncat = uint(pc.aux0);
  uint row = e / uint(pc.aux1);
  int base = int(row * ncat);
  T total = LOAD_T(pc.addr[1], g_dt1, base + int(ncat) - 1);
  T u = uni(draw(e, 0u)) * total;
  if (u >= total) u = total * T(0.5);  // rounding guard (u < total in exact arithmetic)
  uint lo = 0u, hi = ncat - 1u;        // invariant: the answer is in [lo, hi]
  while (lo < hi) {
    uint mid = (lo + hi) >> 1;
    if (LOAD_T(pc.addr[1], g_dt1, base + int(mid)) > u) hi = mid; else lo = mid + 1u;
  }
  store_i64(pc.addr[0], g_dt0, offsets(e).x, int64_t(lo));
#elif OP == 16
  // Probability check: element e of the contiguous probabilities (addr[1]) sets bit 0 when it
  // is negative, infinite or NaN; e < rows checks the row sum (addr[2], aux1 rows) and sets
  // bit 1 when it is not > 0.
  T p = LOAD_T(pc.addr[1], g_dt1, int(e));
  uint bits = (p >= T(0) && p <= T_MAX) ? 0u : 1u;  // NaN fails both
  if (e < uint(pc.aux1) && !(LOAD_T(pc.addr[2], g_dt2, int(e)) > T(0))) bits |= 2u;
  if (bits != 0u) atomicOr(FlagWord(pc.addr[0]).bits, bits);
#endif
}
#endif

#if OP != 12 && OP != 13
void main() {
  g_dt0 = SPEC_DT0 >= 0 ? SPEC_DT0 : pc.dtype[0];
  g_dt1 = SPEC_DT1 >= 0 ? SPEC_DT1 : pc.dtype[1];
  g_dt2 = SPEC_DT2 >= 0 ? SPEC_DT2 : pc.dtype[2];
  uint n = uint(pc.numel);
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < n; e += step) {
#if OP <= 9
    element(e);
#else
    item(e);
#endif
  }
}
#endif
