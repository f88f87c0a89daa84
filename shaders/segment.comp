#version 460
// Segment family: reductions over contiguous segments of rows ("bags") addressed by an
// offsets array, and their backward passes.
//
//   OP 0  bag_forward     embedding_bag forward: bag b covers indices [start_b, end_b) with
//                         start_b = offsets[b], end_b = offsets[b + 1] (the last bag ends at
//                         num_indices, or at offsets[num_bags] with include_last_offset, as
//                         CUDA reads it). Both are clamped into [0, num_indices] so that no
//                         read leaves the index array. For every column d:
//                           sum   out[b, d] = sum_i weight[idx_i, d] * psw[i]   (psw: 1 if absent)
//                           mean  out[b, d] = sum_i weight[idx_i, d] / max(count_b, 1)
//                           max   out[b, d] = weight[idx_k, d], max_idx[b, d] = idx_k where k
//                                 is the first entry, replaced by a later one only when its
//                                 value is larger (the CPU's rule: NaN stays once it is the
//                                 maximum, a later NaN never replaces); 0 / 0 for empty bags.
//                         Entries equal to padding_idx, and indices outside [0, num_weights)
//                         (reported by OP 1), are skipped; count_b is the number of the
//                         others. bag_size[b] (when its address is not 0) = count_b for
//                         mean / max, 0 for sum (the CPU's deterministic zeros).
//   OP 1  bag_offset2bag  per index i: when indices_addr != 0, an index outside
//                         [0, num_weights) is reported (sum / mean: code
//                         TVK_ERR_EMBEDDING_BAG_INDEX_OUT_OF_RANGE, dim = position, index =
//                         value, size = num_weights; max: TVK_ERR_EMBEDDING_BAG_MAX_INDEX_OUT_OF_RANGE),
//                         as is offsets[0] != 0 (TVK_ERR_EMBEDDING_BAG_FIRST_OFFSET_NOT_ZERO);
//                         when out_addr != 0, offset2bag[i] = (number of b < num_bags with
//                         offsets[b] <= i) - 1, clamped to >= 0 (the CPU's cumsum
//                         construction, a binary search here; offsets are non-decreasing).
//                         (The checks run in this per-index pass rather than in OP 0's bag
//                         walk: on lavapipe, error reports inside OP 0's lane-0 loop made the
//                         whole dispatch compute empty bags.)
//   OP 2  bag_backward    dense weight gradient of sum / mean, as a gather per weight row
//                         (no atomics): the caller sorts the indices (sorted values `sorted`,
//                         source positions `perm`); the first position j of every run of
//                         equal values idx owns grad_weight[idx, :] and writes
//                           sum_{q in run} grad[bag(perm[q]), d] * scale_q
//                         scale_q = psw[perm[q]] (if any) / bag_size[bag] (mean, when != 0)
//                         / run length (scale_grad_by_freq). Rows not owned by a run are left
//                         as they are (the caller zero-fills). Runs of padding_idx or of an
//                         index outside [0, num_weights) are skipped, as are entries whose
//                         offset2bag value is outside [0, num_bags).
//   OP 3  seg_forward     segment_reduce: out[o, s, i] = reduce over j in [off[o, s], off[o, s + 1])
//                         of data[o, j, i] (data [outer, axis_size, inner], out [outer,
//                         segments, inner], off [outer, segments + 1], all contiguous; the
//                         bounds are clamped into [0, axis_size], a negative length is empty).
//                         reduce (SegPush.reduce): 0 sum, 1 mean, 2 max, 3 min, 4 prod. The
//                         start value is `initial` when has_initial, else 0 / 0 / -inf / +inf /
//                         1; max / min propagate NaN; mean divides a non-NaN result by a
//                         non-zero length and gives NaN for an empty segment without initial.
//   OP 4  seg_backward    grad_data of segment_reduce, for every element of a non-empty
//                         segment (the caller zero-fills the rest): sum grad; mean grad / len;
//                         max / min grad where data == out or data is NaN, divided by the
//                         number of such elements when there are >= 2 and the value is > 0
//                         (the CPU's rule); prod grad * out / data, or grad * (initial times the
//                         product of the other elements) where data is 0 or NaN.
//                         Split (devices with a loop limit, DeviceCapabilities::
//                         max_loop_iterations): with state != 0 a pass walks only the axis
//                         positions [l_begin, l_end) of every segment. seg_forward carries the
//                         accumulator (accumulator type, element e of `state`: read when
//                         l_begin > 0, written instead of out until the last pass);
//                         seg_backward max / min counts the ties in phase-0 passes (int32 at
//                         element e) and stores in phase-1 passes; sum / mean / prod store
//                         their range (prod's exclusive products of zero / NaN elements still
//                         walk the whole segment).
//
// Math in fp32 for float16 / bfloat16 / float32 weights (KIND_FLOAT32), fp64 for float64.
// Built per (op, kind) by tools/build_shaders.py (segment.variants.toml).
//
// ABI (mirrored by BagPush in src/kernels/segment.cpp):
//   Specialization constants: 0 = local_size_x, 1 = float dtype (weight / out / psw / grad),
//   2 = dtype of `indices` (bag_backward: of `sorted`), 3 = dtype of `offsets` (bag_backward:
//   of `perm`), 4 = dtype of the index-valued results (offset2bag / bag_size / max_idx).
//   bag_forward split (devices with a loop limit, DeviceCapabilities::max_loop_iterations):
//   with state_addr != 0 a pass walks only the index positions [i_begin, i_end) of every bag,
//   the running (acc, count, arg) of column d of bag b at element b * dim + d of the state's
//   three arrays (T acc [num_bags * dim] | int count [..] | int64 arg [..]): read when
//   i_begin > 0, written instead of the outputs when i_end < num_indices; bag_size is then
//   the count of column 0. The launcher records the passes in order on one stream.
//   bag_backward split (the same limit): with state_addr != 0 a pass covers the sorted
//   positions [i_begin, i_end); the run containing i_begin (started before it) is continued
//   by item i_begin from the T [dim] partial sums at state_addr, and the run reaching past
//   i_end leaves its partial sums at state_addr + dim (the next pass's state_addr) instead of
//   writing grad_weight; run bounds come from binary searches (the run length for
//   scale_grad_by_freq included).
//   Work items: bags (OP 0), indices (OP 1), sorted positions (OP 2). `lanes` (a power of two
//   <= local_size_x) invocations share a work item and stride over its columns (adjacent
//   invocations read adjacent columns of a row: coalesced); a workgroup holds
//   local_size_x / lanes items. Grid: 1-D, any number of workgroups (grid-stride loop).
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
layout(constant_id = 1) const int SPEC_FLOAT_DT = DT_FLOAT32;
layout(constant_id = 2) const int SPEC_INDEX_DT = DT_INT64;
layout(constant_id = 3) const int SPEC_OFFSET_DT = DT_INT64;
layout(constant_id = 4) const int SPEC_RESULT_DT = DT_INT64;

#if OP <= 2
layout(push_constant) uniform Push {
  uint64_t weight_addr;   //  0: weight [num_weights, dim] (strides w_stride0 / w_stride1);
                          //     bag_backward: grad [num_bags, dim] contiguous
  uint64_t indices_addr;  //  8: indices (bag_backward: sorted indices)
  uint64_t offsets_addr;  // 16: offsets (bag_backward: perm)
  uint64_t psw_addr;      // 24: per_sample_weights (0: none)
  uint64_t out_addr;      // 32: out [num_bags, dim] / offset2bag / grad_weight [num_weights, dim]
  uint64_t aux_addr;      // 40: bag_size (forward: 0 = not written; bag_backward: offset2bag)
  uint64_t aux2_addr;     // 48: max_idx [num_bags, dim] (forward max; bag_backward: bag_size)
  uint64_t errors;        // 56: the stream's error record (0: do not report)
  int num_bags;           // 64
  int num_indices;        // 68
  int num_offsets;        // 72
  int dim;                // 76
  int num_weights;        // 80
  int w_stride0;          // 84
  int w_stride1;          // 88
  int padding_idx;        // 92: -1: none
  int mode;               // 96: 0 sum, 1 mean, 2 max; bag_backward: bit 0 mean, bit 1
                          //     scale_grad_by_freq
  int lanes;              // 100
  uint64_t state_addr;    // 104: bag_forward split state (0: one pass), see below
  int i_begin;            // 112: bag_forward split: the index positions of this pass
  int i_end;              // 116
} pc;                     // 120 bytes
#else
// Mirrored by SegPush in src/kernels/segment.cpp.
layout(push_constant) uniform Push {
  uint64_t data_addr;     //  0: data [outer, axis_size, inner]
  uint64_t offsets_addr;  //  8: [outer, segments + 1] (dtype: spec constant 3)
  uint64_t out_addr;      // 16: forward: out; backward: the forward's output
  uint64_t grad_addr;     // 24: backward: grad [outer, segments, inner]
  uint64_t grad_in_addr;  // 32: backward: grad_data, like data
  double initial;         // 40
  int outer;              // 48
  int axis_size;          // 52
  int segments;           // 56
  int inner;              // 60
  int reduce;             // 64
  int has_initial;        // 68
  uint64_t state;         // 72: split state (0: one pass), see below
  int l_begin;            // 80: split: the data positions [l_begin, l_end) of this pass
  int l_end;              // 84
  int phase;              // 88: split seg_backward max / min: 0 count ties, 1 store
  int pad_;               // 92
} pc;                     // 96 bytes
#endif

int64_t load_index(uint64_t base, int dt, int i) {
  return dt == DT_INT32 ? int64_t(RefI32(tvk_elem_addr(base, i, 2)).v)
                        : RefI64(tvk_elem_addr(base, i, 3)).v;
}

void store_index(uint64_t base, int i, int64_t v) {
  if (SPEC_RESULT_DT == DT_INT32)
    RefI32(tvk_elem_addr(base, i, 2)).v = int(v);
  else
    RefI64(tvk_elem_addr(base, i, 3)).v = v;
}

#if KIND == KIND_FLOAT64
bool tvk_isnan_t(double v) { return v != v; }
#else
bool tvk_isnan_t(float v) { return isnan(v); }
#endif

T load_float(uint64_t base, int i) { return LOAD_T(base, SPEC_FLOAT_DT, i); }
void store_float(uint64_t base, int i, T v) { STORE_T(base, SPEC_FLOAT_DT, i, v); }

#if OP >= 3
T start_value() {
  if (pc.has_initial != 0) return T(pc.initial);
  switch (pc.reduce) {
#if KIND == KIND_FLOAT64
    case 2: return -TVK_F64_INF;
    case 3: return TVK_F64_INF;
#else
    case 2: return -TVK_F32_INF;
    case 3: return TVK_F32_INF;
#endif
    case 4: return T(1);
    default: return T(0);
  }
}

// The segment [start, end) of output element `e` and its (o, s, i) decomposition.
void segment_of(int e, out int o, out int i, out int start, out int end) {
  i = e % pc.inner;
  const int os = e / pc.inner;
  const int s = os % pc.segments;
  o = os / pc.segments;
  const int row = o * (pc.segments + 1) + s;
  const int64_t n = int64_t(pc.axis_size);
  start = int(clamp(load_index(pc.offsets_addr, SPEC_OFFSET_DT, row), 0l, n));
  end = int(clamp(load_index(pc.offsets_addr, SPEC_OFFSET_DT, row + 1), int64_t(start), n));
}

int data_index(int o, int j, int i) { return (o * pc.axis_size + j) * pc.inner + i; }
#endif

void main() {
#if OP >= 3
  const int total = pc.outer * pc.segments * pc.inner;
  const int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int e = int(gl_GlobalInvocationID.x); e < total; e += stride) {
    int o, i, start, end;
    segment_of(e, o, i, start, end);
    const bool split = pc.state != 0ul;
    const int first = split ? max(start, pc.l_begin) : start;
    const int last = split ? min(end, pc.l_end) : end;
#if OP == 3
    const int acc_dt = KIND == KIND_FLOAT64 ? DT_FLOAT64 : DT_FLOAT32;
    T acc = split && pc.l_begin > 0 ? LOAD_T(pc.state, acc_dt, e) : start_value();
    for (int j = first; j < last; ++j) {
      const T v = load_float(pc.data_addr, data_index(o, j, i));
      switch (pc.reduce) {
        // std::max / std::min as the CPU applies them (a NaN start value stays)
        case 2: acc = tvk_isnan_t(v) ? v : (acc < v ? v : acc); break;
        case 3: acc = tvk_isnan_t(v) ? v : (v < acc ? v : acc); break;
        case 4: acc *= v; break;
        default: acc += v; break;
      }
    }
    if (split && pc.l_end < pc.axis_size) {  // more passes follow
      STORE_T(pc.state, acc_dt, e, acc);
      continue;
    }
    if (pc.reduce == 1) {
      const int len = end - start;
      if (len == 0 && pc.has_initial == 0)
        acc = T(0) / T(0);
      else if (len > 0 && !tvk_isnan_t(acc))
        acc /= T(len);
    }
    store_float(pc.out_addr, e, acc);
#else
    const int len = end - start;
    if (len == 0) continue;
    const T g = load_float(pc.grad_addr, e);
    if (pc.reduce == 2 || pc.reduce == 3) {
      const T result = load_float(pc.out_addr, e);
      int ties = 0;
      if (!split || pc.phase == 0) {
        if (split && pc.l_begin > 0) ties = RefI32(tvk_elem_addr(pc.state, e, 2)).v;
        for (int j = first; j < last; ++j) {
          const T v = load_float(pc.data_addr, data_index(o, j, i));
          if (tvk_isnan_t(v) || v == result) ++ties;
        }
        if (split) {
          RefI32(tvk_elem_addr(pc.state, e, 2)).v = ties;
          continue;
        }
      } else {
        ties = RefI32(tvk_elem_addr(pc.state, e, 2)).v;
      }
      const T share = (ties >= 2 && g > T(0)) ? g / T(ties) : g;
      for (int j = first; j < last; ++j) {
        const T v = load_float(pc.data_addr, data_index(o, j, i));
        if (tvk_isnan_t(v) || v == result) store_float(pc.grad_in_addr, data_index(o, j, i), share);
      }
    } else if (pc.reduce == 4) {
      const T result = load_float(pc.out_addr, e);
      for (int j = first; j < last; ++j) {
        const T v = load_float(pc.data_addr, data_index(o, j, i));
        T gi;
        if (tvk_isnan_t(v) || v == T(0)) {
          T exclusive = pc.has_initial != 0 ? T(pc.initial) : T(1);
          for (int k = start; k < end; ++k)
            if (k != j) exclusive *= load_float(pc.data_addr, data_index(o, k, i));
          gi = g * exclusive;
        } else {
          gi = g * result / v;
        }
        store_float(pc.grad_in_addr, data_index(o, j, i), gi);
      }
    } else {
      const T gi = pc.reduce == 1 ? g / T(len) : g;
      for (int j = first; j < last; ++j) store_float(pc.grad_in_addr, data_index(o, j, i), gi);
    }
#endif
  }
#else
  const int lanes = pc.lanes;
  const int items_per_group = int(gl_WorkGroupSize.x) / lanes;
  const int lane = int(gl_LocalInvocationID.x) % lanes;
  const int first_item = int(gl_WorkGroupID.x) * items_per_group +
                         int(gl_LocalInvocationID.x) / lanes;
  const int item_stride = int(gl_NumWorkGroups.x) * items_per_group;

#if OP == 0
  // ---------------------------------------------------------------- bag forward
  const int64_t n = int64_t(pc.num_indices);
  for (int b = first_item; b < pc.num_bags; b += item_stride) {
    const int start = int(clamp(load_index(pc.offsets_addr, SPEC_OFFSET_DT, b), 0l, n));
    const int end = b + 1 < pc.num_offsets
                        ? int(clamp(load_index(pc.offsets_addr, SPEC_OFFSET_DT, b + 1), int64_t(start), n))
                        : pc.num_indices;
    const bool split = pc.state_addr != 0ul;
    // bag_size: lane 0 counts the bag's valid, non-padding entries (split: column 0's count).
    if (lane == 0 && !split) {
      int count = 0;
      for (int i = start; i < end; ++i) {
        const int64_t idx = load_index(pc.indices_addr, SPEC_INDEX_DT, i);
        if (idx >= 0 && idx < pc.num_weights && idx != pc.padding_idx) ++count;
      }
      if (pc.aux_addr != 0ul) store_index(pc.aux_addr, b, pc.mode == 0 ? 0 : count);
    }
    const int cells = pc.num_bags * pc.dim;
    const uint64_t count_addr = pc.state_addr + uint64_t(cells) * uint64_t(KIND == KIND_FLOAT64 ? 8 : 4);
    const uint64_t arg_addr = (count_addr + uint64_t(cells) * 4ul + 7ul) & ~7ul;  // 8-byte aligned
    for (int d = lane; d < pc.dim; d += lanes) {
      T acc = T(0);
      int count = 0;
      int64_t arg = 0;
      const int cell = b * pc.dim + d;
      int first = start, last = end;
      if (split) {
        first = max(start, pc.i_begin);
        last = min(end, pc.i_end);
        if (pc.i_begin > 0) {
          acc = LOAD_T(pc.state_addr, KIND == KIND_FLOAT64 ? DT_FLOAT64 : DT_FLOAT32, cell);
          count = RefI32(tvk_elem_addr(count_addr, cell, 2)).v;
          arg = RefI64(tvk_elem_addr(arg_addr, cell, 3)).v;
        }
      }
      for (int i = first; i < last; ++i) {
        const int64_t idx = load_index(pc.indices_addr, SPEC_INDEX_DT, i);
        if (idx < 0 || idx >= pc.num_weights || idx == pc.padding_idx) continue;
        const T v = load_float(pc.weight_addr, int(idx) * pc.w_stride0 + d * pc.w_stride1);
        if (pc.mode == 2) {
          if (count == 0 || v > acc) {
            acc = v;
            arg = idx;
          }
        } else {
          acc += pc.psw_addr != 0ul ? v * load_float(pc.psw_addr, i) : v;
        }
        ++count;
      }
      if (split && pc.i_end < pc.num_indices) {  // more passes follow
        STORE_T(pc.state_addr, KIND == KIND_FLOAT64 ? DT_FLOAT64 : DT_FLOAT32, cell, acc);
        RefI32(tvk_elem_addr(count_addr, cell, 2)).v = count;
        RefI64(tvk_elem_addr(arg_addr, cell, 3)).v = arg;
        continue;
      }
      if (split && d == 0 && pc.aux_addr != 0ul) store_index(pc.aux_addr, b, pc.mode == 0 ? 0 : count);
      if (pc.mode == 1) acc /= T(max(count, 1));
      store_float(pc.out_addr, b * pc.dim + d, acc);
      if (pc.mode == 2) store_index(pc.aux2_addr, b * pc.dim + d, arg);
    }
  }

#elif OP == 1
  // ---------------------------------------------------------------- checks and offset2bag
  if (lane != 0) return;
  if (gl_GlobalInvocationID.x == 0 && pc.num_offsets > 0 && pc.errors != 0ul) {
    const int64_t first = load_index(pc.offsets_addr, SPEC_OFFSET_DT, 0);
    if (first != 0)
      tvk_report_index_error(pc.errors, TVK_ERR_EMBEDDING_BAG_FIRST_OFFSET_NOT_ZERO, first, 0);
  }
  for (int i = first_item; i < pc.num_indices; i += item_stride) {
    if (pc.indices_addr != 0ul) {
      const int64_t idx = load_index(pc.indices_addr, SPEC_INDEX_DT, i);
      if (idx < 0 || idx >= pc.num_weights) {
        if (pc.mode == 2)
          tvk_report_index_error(pc.errors, TVK_ERR_EMBEDDING_BAG_MAX_INDEX_OUT_OF_RANGE, idx,
                                 pc.num_weights);
        else
          tvk_report_index_error(pc.errors, TVK_ERR_EMBEDDING_BAG_INDEX_OUT_OF_RANGE, idx,
                                 pc.num_weights, i);
      }
    }
    if (pc.out_addr == 0ul) continue;
    // upper bound: the first b in [0, num_bags) with offsets[b] > i
    int lo = 0, hi = pc.num_bags;
    while (lo < hi) {
      const int mid = (lo + hi) >> 1;
      if (load_index(pc.offsets_addr, SPEC_OFFSET_DT, mid) <= int64_t(i))
        lo = mid + 1;
      else
        hi = mid;
    }
    store_index(pc.out_addr, i, int64_t(max(lo - 1, 0)));
  }

#else
  // ---------------------------------------------------------------- bag backward (sum / mean)
  const bool mean = (pc.mode & 1) != 0;
  const bool by_freq = (pc.mode & 2) != 0;
  const bool split = pc.state_addr != 0ul;
  const int j_first = split ? pc.i_begin : 0, j_last = split ? pc.i_end : pc.num_indices;
  const int elem = KIND == KIND_FLOAT64 ? DT_FLOAT64 : DT_FLOAT32;
  for (int j = j_first + first_item; j < j_last; j += item_stride) {
    const int64_t idx = load_index(pc.indices_addr, SPEC_INDEX_DT, j);
    const bool continued = j > 0 && load_index(pc.indices_addr, SPEC_INDEX_DT, j - 1) == idx;
    if (continued && !(split && j == j_first)) continue;  // not a run start
    if (idx < 0 || idx >= pc.num_weights || idx == pc.padding_idx) continue;
    int run_start = j, run_end = j + 1;
    if (split) {
      int lo = 0, hi = j;  // first position of the run: lower bound of idx in [0, j)
      while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (load_index(pc.indices_addr, SPEC_INDEX_DT, mid) < idx) lo = mid + 1; else hi = mid;
      }
      run_start = lo;
      lo = j + 1;  // one past its last: upper bound of idx in (j, n)
      hi = pc.num_indices;
      while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (load_index(pc.indices_addr, SPEC_INDEX_DT, mid) <= idx) lo = mid + 1; else hi = mid;
      }
      run_end = lo;
    } else {
      while (run_end < pc.num_indices && load_index(pc.indices_addr, SPEC_INDEX_DT, run_end) == idx)
        ++run_end;
    }
    const T freq_scale = by_freq ? T(1) / T(run_end - run_start) : T(1);
    const int q_end = split ? min(run_end, j_last) : run_end;
    for (int d = lane; d < pc.dim; d += lanes) {
      T acc = T(0);
      if (split && continued) acc = LOAD_T(pc.state_addr, elem, d);
      for (int q = j; q < q_end; ++q) {
        const int src = int(load_index(pc.offsets_addr, SPEC_OFFSET_DT, q));  // perm
        const int64_t bag64 = load_index(pc.aux_addr, SPEC_RESULT_DT, src);  // offset2bag
        if (bag64 < 0 || bag64 >= pc.num_bags) continue;  // never read outside grad
        const int bag = int(bag64);
        T scale = freq_scale;
        if (pc.psw_addr != 0ul) scale *= load_float(pc.psw_addr, src);
        if (mean) {
          const int64_t size = load_index(pc.aux2_addr, SPEC_RESULT_DT, bag);
          if (size != 0) scale /= T(size);
        }
        acc += load_float(pc.weight_addr, bag * pc.dim + d) * scale;
      }
      if (q_end < run_end)  // the run goes on in the next pass
        STORE_T(pc.state_addr, elem, pc.dim + d, acc);
      else
        store_float(pc.out_addr, int(idx) * pc.dim + d, acc);
    }
  }
#endif
#endif  // OP >= 3
}
