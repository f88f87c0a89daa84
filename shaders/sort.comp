#version 460
// Sorting along one dim of a contiguous [outer, n, inner] tensor (sort, argsort, topk,
// kthvalue, median). Rows q in [0, rows), rows = outer * inner: o = q / inner, i = q % inner;
// element j of row q is at (o * n + j) * inner + i of the input, and output position p of the
// row at (o * out_len + p) * inner + i of the values / indices outputs.
//
// Order: every element becomes a pair (key, index). The key is an unsigned integer that
// orders like the value under PyTorch's CPU rules (NaN is greater than every number, -0.0 ==
// 0.0; descending sorts invert the key), the index is the element's position in the row, so
// pairs are all distinct and sorting them lexicographically is stable: ties keep their input
// order in both directions, which is the CPU's stable=True order.
//
// Ops (OP; built per key width, KEY64 for int64 / float64, from sort.variants.toml):
//   0  tile sort: a workgroup sorts TILE = 4 * local_size_x pairs in shared memory with a
//      bitonic network whose blocks are `seg` (a power of two <= TILE) pairs long: every
//      block is one row (rows with n <= seg; several rows per workgroup when seg < TILE) or
//      one seg-long segment of a longer row. Padding pairs (key and index all ones) sort last.
//      final != 0: the sorted positions [first, first + out_len) are written to the outputs;
//      final == 0: the sorted segments go to the scratch arrays keys_b / idx_b (row-major
//      [rows, n]).
//   1  merge pass: the scratch rows keys_a / idx_a consist of sorted runs of `seg` pairs; each
//      invocation moves one pair to its place in the merged run of 2 * seg (its rank in its own
//      run plus a binary search in the partner run), in keys_b / idx_b, or, when final != 0,
//      to the outputs (positions [first, first + out_len) as for op 0).
//   2  median select, one invocation per row of ascending sorted values (in_addr) and int64
//      indices (keys_a) with out_len == n: writes values[q] / indices[q] of the lower median
//      (first == 0: median; a row with NaN gives its first NaN) or the lower median of the
//      non-NaN values (first == 1: nanmedian; an all-NaN row gives NaN and index 0).
//   3  mode select, one invocation per row of ascending stably sorted values / indices (as
//      op 2): values[q] / indices[q] of the last element of the longest run of equal values
//      (the first such run: the smallest value; NaN never equals anything), the CPU's choice.
//      Split (devices with a loop limit): keys_b != 0 holds uint (best, best_freq, freq) per
//      row and the dispatch walks only the row positions [seg, out_len): read when seg > 0,
//      written instead of the outputs when out_len < n (the launcher records the ranges in
//      order).
// Values are never converted: outputs copy the input element's bits (raw loads and stores by
// element size), so NaN payloads and -0.0 survive. Indices are written as int64.
//
// Specialization constants: 0 = local_size_x (a power of two), 1 = input dtype.
// Grid: 1-D, any number of workgroups (loops cover the rest).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#ifndef OP
#define OP 0
#endif
#ifndef KEY64
#define KEY64 0
#endif
#if KEY64
#define K uint64_t
#define K_MAX 0xFFFFFFFFFFFFFFFFul
#define K_SIGN 0x8000000000000000ul
#else
#define K uint
#define K_MAX 0xFFFFFFFFu
#define K_SIGN 0x80000000u
#endif
#define IDX_PAD 0xFFFFFFFFu

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_DT = 8;

layout(push_constant) uniform Push {
  uint64_t in_addr;       //  0: input (op 2: sorted values)
  uint64_t values_addr;   //  8: values output
  uint64_t indices_addr;  // 16: int64 indices output
  uint64_t keys_a;        // 24: scratch keys read by a merge pass (op 2: sorted indices)
  uint64_t idx_a;         // 32: scratch uint32 indices read by a merge pass
  uint64_t keys_b;        // 40: scratch keys written by ops 0 / 1
  uint64_t idx_b;         // 48
  int rows;               // 56
  int n;                  // 60
  int inner;              // 64
  int seg;                // 68: op 0 block length, op 1 run width
  int first;              // 72
  int out_len;            // 76
  int descending;         // 80
  int final_pass;         // 84
} pc;                     // 88 bytes

layout(buffer_reference, std430, buffer_reference_align = 4) buffer RefU32 { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefU64 { uint64_t v; };

// ---- raw element bits ----
uint64_t load_bits(uint64_t base, int i) {
  switch (SPEC_DT) {
    case DT_BOOL: case DT_UINT8: case DT_INT8:
      return uint64_t(uint(RefU8(tvk_elem_addr(base, i, 0)).v));
    case DT_INT16: case DT_FLOAT16: case DT_BFLOAT16:
      return uint64_t(uint(RefU16(tvk_elem_addr(base, i, 1)).v));
    case DT_INT32: case DT_FLOAT32:
      return uint64_t(RefU32(tvk_elem_addr(base, i, 2)).v);
    default:
      return RefU64(tvk_elem_addr(base, i, 3)).v;
  }
}

void store_bits(uint64_t base, int i, uint64_t bits) {
  switch (SPEC_DT) {
    case DT_BOOL: case DT_UINT8: case DT_INT8:
      RefU8(tvk_elem_addr(base, i, 0)).v = uint8_t(uint(bits)); break;
    case DT_INT16: case DT_FLOAT16: case DT_BFLOAT16:
      RefU16(tvk_elem_addr(base, i, 1)).v = uint16_t(uint(bits)); break;
    case DT_INT32: case DT_FLOAT32:
      RefU32(tvk_elem_addr(base, i, 2)).v = uint(bits); break;
    default:
      RefU64(tvk_elem_addr(base, i, 3)).v = bits; break;
  }
}

// Magnitude bits of +inf (float dtypes) and of the sign bit.
uint64_t float_inf_bits() {
  switch (SPEC_DT) {
    case DT_FLOAT16: return 0x7C00ul;
    case DT_BFLOAT16: return 0x7F80ul;
    case DT_FLOAT32: return 0x7F800000ul;
    default: return 0x7FF0000000000000ul;
  }
}
uint64_t float_sign_bit() {
  switch (SPEC_DT) {
    case DT_FLOAT16: case DT_BFLOAT16: return 0x8000ul;
    case DT_FLOAT32: return 0x80000000ul;
    default: return 0x8000000000000000ul;
  }
}
bool is_float_dt() {
  return SPEC_DT == DT_FLOAT16 || SPEC_DT == DT_BFLOAT16 || SPEC_DT == DT_FLOAT32 ||
         SPEC_DT == DT_FLOAT64;
}

bool is_nan_bits(uint64_t bits) {
  if (!is_float_dt()) return false;
  return (bits & (float_sign_bit() - 1ul)) > float_inf_bits();
}

// The ascending order key of an element (see the header).
K key_of(uint64_t bits) {
  switch (SPEC_DT) {
    case DT_BOOL: case DT_UINT8: return K(bits);
    case DT_INT8: return K(int64_t(int8_t(int(bits)))) ^ K_SIGN;
    case DT_INT16: return K(int64_t(int16_t(int(bits)))) ^ K_SIGN;
    case DT_INT32: return K(int64_t(int(uint(bits)))) ^ K_SIGN;
    case DT_INT64: return K(bits) ^ K_SIGN;
    default: {
      uint64_t sign = float_sign_bit();
      uint64_t mag = bits & (sign - 1ul);
      if (mag > float_inf_bits()) return K_MAX;  // NaN: above +inf
      return (bits & sign) != 0ul ? K_SIGN - K(mag) : K_SIGN + K(mag);  // -0.0 == +0.0
    }
  }
}

K directed_key(uint64_t bits) {
  K k = key_of(bits);
  return pc.descending != 0 ? k ^ K_MAX : k;
}

bool pair_less(K ka, uint ia, K kb, uint ib) { return ka < kb || (ka == kb && ia < ib); }

// Element offset of position j of row q in an [outer, len, inner] array.
int row_offset(uint q, uint j, uint len) {
  uint inner = uint(pc.inner);
  uint o = q / inner;
  return int((o * len + j) * inner + (q - o * inner));
}

// Writes sorted position `pos` of row q (the pair's index `idx`) when it is in the window.
void write_output(uint q, uint pos, uint idx) {
  uint first = uint(pc.first);
  if (pos < first || pos - first >= uint(pc.out_len)) return;
  int dst = row_offset(q, pos - first, uint(pc.out_len));
  store_bits(pc.values_addr, dst, load_bits(pc.in_addr, row_offset(q, idx, uint(pc.n))));
  RefI64(tvk_elem_addr(pc.indices_addr, dst, 3)).v = int64_t(idx);
}

#if KEY64
#define KEY_REF RefU64
#define KEY_LOG2 3
#else
#define KEY_REF RefU32
#define KEY_LOG2 2
#endif
K load_key(uint64_t base, uint e) { return KEY_REF(tvk_elem_addr(base, int(e), KEY_LOG2)).v; }
uint load_idx(uint64_t base, uint e) { return RefU32(tvk_elem_addr(base, int(e), 2)).v; }
void store_pair(uint e, K k, uint idx) {
  KEY_REF(tvk_elem_addr(pc.keys_b, int(e), KEY_LOG2)).v = k;
  RefU32(tvk_elem_addr(pc.idx_b, int(e), 2)).v = idx;
}

#if OP == 0
const uint TILE = gl_WorkGroupSize.x * 4u;
shared K skey[TILE];
shared uint sidx[TILE];

void main() {
  uint wg = gl_WorkGroupSize.x;
  uint lid = gl_LocalInvocationID.x;
  uint n = uint(pc.n);
  uint seg = uint(pc.seg);
  uint segs_per_row = (n + seg - 1u) / seg;
  uint total_segs = uint(pc.rows) * segs_per_row;
  uint blocks = TILE / seg;
  uint tiles = (total_segs + blocks - 1u) / blocks;
  for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
    for (uint t = lid; t < TILE; t += wg) {
      uint s = tile * blocks + t / seg;
      uint j = t % seg;
      K k = K_MAX;
      uint idx = IDX_PAD;
      if (s < total_segs) {
        uint q = s / segs_per_row;
        uint col = (s - q * segs_per_row) * seg + j;
        if (col < n) {
          k = directed_key(load_bits(pc.in_addr, row_offset(q, col, n)));
          idx = col;
        }
      }
      skey[t] = k;
      sidx[t] = idx;
    }
    barrier();
    // Bitonic network that leaves every seg-long block ascending: the first step of each
    // stage compares mirrored positions of a k-block, the later steps are half-cleaners.
    for (uint k = 2u; k <= seg; k <<= 1) {
      for (uint j = k >> 1; j > 0u; j >>= 1) {
        for (uint p = lid; p < TILE / 2u; p += wg) {
          uint a = ((p & ~(j - 1u)) << 1) | (p & (j - 1u));
          uint b = j == (k >> 1) ? a ^ (k - 1u) : a + j;
          K ka = skey[a], kb = skey[b];
          uint ia = sidx[a], ib = sidx[b];
          if (pair_less(kb, ib, ka, ia)) {
            skey[a] = kb; sidx[a] = ib;
            skey[b] = ka; sidx[b] = ia;
          }
        }
        barrier();
      }
    }
    for (uint t = lid; t < TILE; t += wg) {
      uint s = tile * blocks + t / seg;
      uint j = t % seg;
      if (s >= total_segs) continue;
      uint q = s / segs_per_row;
      uint col = (s - q * segs_per_row) * seg + j;
      if (col >= n) continue;  // padding sorts after the row's elements
      if (pc.final_pass != 0)
        write_output(q, j, sidx[t]);
      else
        store_pair(q * n + col, skey[t], sidx[t]);
    }
    barrier();  // shared arrays are reused by the next tile
  }
}
#elif OP == 1
void main() {
  uint n = uint(pc.n);
  uint w = uint(pc.seg);
  uint total = uint(pc.rows) * n;
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += step) {
    uint q = e / n;
    uint c = e - q * n;
    uint run = c / w;
    uint base = (run & ~1u) * w;
    K k = load_key(pc.keys_a, e);
    uint idx = load_idx(pc.idx_a, e);
    uint lo, hi, rank;
    if ((run & 1u) == 0u) {
      lo = min(base + w, n);
      hi = min(base + 2u * w, n);
      rank = c - base;
    } else {
      lo = base;
      hi = base + w;
      rank = c - base - w;
    }
    uint start = lo;
    while (lo < hi) {  // pairs of the partner run below (k, idx)
      uint mid = (lo + hi) >> 1;
      if (pair_less(load_key(pc.keys_a, q * n + mid), load_idx(pc.idx_a, q * n + mid), k, idx))
        lo = mid + 1u;
      else
        hi = mid;
    }
    uint pos = base + rank + (lo - start);
    if (pc.final_pass != 0)
      write_output(q, pos, idx);
    else
      store_pair(q * n + pos, k, idx);
  }
}
#elif OP == 3
void main() {
  uint n = uint(pc.n);
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const bool split = pc.keys_b != 0ul;
  const uint j_begin = split ? uint(pc.seg) : 0u;
  const uint j_end = split ? min(n, uint(pc.out_len)) : n;
  for (uint q = gl_GlobalInvocationID.x; q < uint(pc.rows); q += step) {
    uint best = 0u, best_freq = 0u, freq = 0u;
    const int st = 3 * int(q);
    if (split && j_begin > 0u) {
      best = RefU32(tvk_elem_addr(pc.keys_b, st, 2)).v;
      best_freq = RefU32(tvk_elem_addr(pc.keys_b, st + 1, 2)).v;
      freq = RefU32(tvk_elem_addr(pc.keys_b, st + 2, 2)).v;
    }
    uint64_t bits = load_bits(pc.in_addr, row_offset(q, j_begin, n));
    for (uint j = j_begin; j < j_end; ++j) {
      ++freq;
      uint64_t next = j + 1u < n ? load_bits(pc.in_addr, row_offset(q, j + 1u, n)) : 0ul;
      // A run ends at the row's end, before a different value, and at every NaN.
      if (j + 1u == n || is_nan_bits(bits) || key_of(next) != key_of(bits)) {
        if (freq > best_freq) {
          best = j;
          best_freq = freq;
        }
        freq = 0u;
      }
      bits = next;
    }
    if (j_end < n) {  // more ranges follow
      RefU32(tvk_elem_addr(pc.keys_b, st, 2)).v = best;
      RefU32(tvk_elem_addr(pc.keys_b, st + 1, 2)).v = best_freq;
      RefU32(tvk_elem_addr(pc.keys_b, st + 2, 2)).v = freq;
      continue;
    }
    int src = row_offset(q, best, n);
    store_bits(pc.values_addr, int(q), load_bits(pc.in_addr, src));
    RefI64(tvk_elem_addr(pc.indices_addr, int(q), 3)).v =
        RefI64(tvk_elem_addr(pc.keys_a, src, 3)).v;
  }
}
#else
void main() {
  uint n = uint(pc.n);
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < uint(pc.rows); q += step) {
    uint lo = 0u, hi = n;  // NaN sorts last: find the first one
    while (lo < hi) {
      uint mid = (lo + hi) >> 1;
      if (is_nan_bits(load_bits(pc.in_addr, row_offset(q, mid, n))))
        hi = mid;
      else
        lo = mid + 1u;
    }
    uint count = lo;  // non-NaN values
    uint pos;
    if (pc.first == 0)
      pos = count < n ? count : (n - 1u) / 2u;
    else
      pos = count == 0u ? 0u : (count - 1u) / 2u;
    int src = row_offset(q, pos, n);
    store_bits(pc.values_addr, int(q), load_bits(pc.in_addr, src));
    RefI64(tvk_elem_addr(pc.indices_addr, int(q), 3)).v =
        RefI64(tvk_elem_addr(pc.keys_a, src, 3)).v;
  }
}
#endif
