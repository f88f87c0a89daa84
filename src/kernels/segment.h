// L2: the segment family (shaders/segment.comp). No torch headers.
//
// embedding_bag: reductions of weight rows over "bags" of an index array delimited by an
// offsets array, the index -> bag map (offset2bag), and the dense weight gradient of the sum /
// mean modes as a per-row gather over sorted indices (no atomics).
// segment_reduce: reductions of contiguous segments along one axis, forward and backward.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class BagMode : int32_t { Sum = 0, Mean = 1, Max = 2 };

struct EmbeddingBagForward {
  BagMode mode = BagMode::Sum;
  // Float32 for float16 / bfloat16 / float32 weights, Float64 for float64 (shaderFloat64).
  ComputeKind kind = ComputeKind::Float32;
  int64_t num_weights = 0, dim = 0;      // weight is [num_weights, dim]
  int64_t weight_strides[2] = {0, 1};    // element strides of weight
  int64_t num_indices = 0;
  int64_t num_offsets = 0;               // entries of `offsets`
  int64_t num_bags = 0;                  // num_offsets, or num_offsets - 1 (include_last_offset)
  int64_t padding_idx = -1;              // in [0, num_weights) or -1 (none)
  Operand weight;                        // float dtype
  Operand indices, offsets;              // Int32 / Int64 each, contiguous
  Operand per_sample_weights;            // address 0: none (sum only); weight's dtype, contiguous
  Operand out;                           // [num_bags, dim] contiguous, weight's dtype
  Operand bag_size;                      // [num_bags] (address 0: not written); Int32 / Int64
  Operand max_indices;                   // max: [num_bags, dim] contiguous, bag_size's dtype
  Operand offset2bag;                    // [num_indices] (address 0: not written); Int32 / Int64
};

// Records the forward pass: a per-index pass that checks the indices and offsets[0] (and
// writes offset2bag when asked), then the per-bag reduction (see shaders/segment.comp, OP 1
// and OP 0, for the exact semantics: bag ranges, padding, empty bags, the max tie / NaN rule).
// Indices outside [0, num_weights) are skipped and reported through the stream's error
// record (embedding_bag's codes), as is offsets[0] != 0. Throws std::invalid_argument for
// bad kinds / dtypes / sizes, float64 without shaderFloat64, more than 2^31 - 1 elements or
// weight offsets beyond int32.
void embedding_bag_forward(Stream& stream, const EmbeddingBagForward& problem);

// offset2bag[i] (i < num_indices) = number of the first `num_bags` offsets that are <= i,
// minus 1, at least 0. offsets / offset2bag: Int32 or Int64, contiguous.
void embedding_bag_offset2bag(Stream& stream, int64_t num_indices, int64_t num_bags,
                              Operand offsets, Operand offset2bag);

struct EmbeddingBagBackward {
  bool mean = false;                 // divide by bag_size[bag] (when it is not 0)
  bool scale_grad_by_freq = false;   // divide by the number of occurrences of the index
  ComputeKind kind = ComputeKind::Float32;
  int64_t num_weights = 0, dim = 0, num_indices = 0, num_bags = 0;
  int64_t padding_idx = -1;
  Operand grad;                      // [num_bags, dim] contiguous, float dtype
  Operand sorted_indices;            // [num_indices] ascending, Int32 / Int64
  Operand permutation;               // [num_indices] Int32 / Int64: source position of each
  Operand offset2bag;                // [num_indices] Int32 / Int64 (same dtype as bag_size)
  Operand bag_size;                  // [num_bags]
  Operand per_sample_weights;        // address 0: none
  Operand grad_weight;               // [num_weights, dim] contiguous, zero-filled by the caller
};

// Records the dense weight gradient of sum / mean (see shaders/segment.comp, OP 2).
void embedding_bag_backward(Stream& stream, const EmbeddingBagBackward& problem);

// ---- segment_reduce ----
enum class SegmentReduceOp : int32_t { Sum = 0, Mean = 1, Max = 2, Min = 3, Prod = 4 };

struct SegmentReduce {
  SegmentReduceOp op = SegmentReduceOp::Sum;
  ComputeKind kind = ComputeKind::Float32;   // Float32 (16-bit / float32 data) or Float64
  int64_t outer = 1, axis_size = 0, segments = 0, inner = 1;
  bool has_initial = false;
  double initial = 0;
  Operand data;      // [outer, axis_size, inner] contiguous, float dtype
  Operand offsets;   // [outer, segments + 1] contiguous, Int32 / Int64: segment s of row o
                     // is [offsets[o, s], offsets[o, s + 1]) (clamped into [0, axis_size])
  Operand out;       // [outer, segments, inner] contiguous, data's dtype
};

// Records segment_reduce's forward pass (shaders/segment.comp, OP 3).
void segment_reduce(Stream& stream, const SegmentReduce& problem);

// Records its backward pass (OP 4): `grad` and `output` are shaped like problem.out,
// `grad_data` like problem.data (zero-filled by the caller), all of data's dtype.
void segment_reduce_backward(Stream& stream, const SegmentReduce& problem, Operand grad,
                             Operand grad_data);

}  // namespace tvk::kernels
