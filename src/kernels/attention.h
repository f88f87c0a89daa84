// L2: fused scaled-dot-product attention forward (shaders/attention.comp). No torch headers.
//
// Shapes: q [batch, heads, L, E], k [batch, heads / group, S, E], v [batch, heads / group, S,
// Ev], out [batch, heads, L, Ev] (q's dtype), lse [batch, heads, L] float32 contiguous. Strides
// are element strides of the batch, head and row dims; the head dim itself must be contiguous.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

struct AttentionStrides {
  int64_t batch = 0, head = 0, row = 0;
};

// Dropout on the attention probabilities (p > 0): key j of row r = (b * heads + h) * L + i is
// kept with probability 1 - p by a Philox number that depends only on (seed, offset, r, j)
// (shaders/attention_mask.glsl), and the kept ones are scaled by 1 / (1 - p). The forward
// kernels of both strategies, the fused backward and attention_probabilities regenerate the
// same decisions. (seed, offset): the generator's for the launch, which reserves
// kAttentionDropoutCounters counter values (offset a multiple of 4).
struct AttentionDropout {
  double p = 0.0;  // in [0, 1)
  uint64_t seed = 0, offset = 0;
};
constexpr uint64_t kAttentionDropoutCounters = 4;

struct AttentionForward {
  int64_t batch = 0, heads = 0, group = 1;  // group: q heads per k / v head (GQA)
  int64_t L = 0, S = 0, E = 0, Ev = 0;
  float scale = 1.0f;                        // applied to q . k
  bool causal = false;                       // key j > query i is excluded (top-left aligned)
  // q, k, v and out: float16, bfloat16 or float32, all the same dtype.
  Operand q, k, v, out, lse;
  AttentionStrides q_strides, k_strides, v_strides, out_strides;
  // Optional mask (address 0: none), broadcast to [batch, heads, L, S] by its strides (0 for
  // broadcast dims): Bool (false excludes the key) or float32 / float16 / bfloat16 (added to
  // the scores; -inf excludes the key).
  Operand mask{0, DType::Bool};
  int64_t mask_strides[4] = {0, 0, 0, 0};
  AttentionDropout dropout;
};

// Largest head dim (E or Ev) the kernel supports.
constexpr int64_t kAttentionMaxHeadDim = 256;

// Strategies of the forward kernel:
//   Tiled  one workgroup per (batch * head, 16 query rows), 4 invocations per row, k / v tiles
//          through shared memory (GPUs); with few query tiles (decode) the keys are split
//          into chunks of their own workgroups and merged by a second pass (split-KV).
//   Rows   one invocation per query row, no shared memory, no barriers (CPU devices such as
//          lavapipe, where barriers are coroutine switches and shared memory saves no traffic).
// Auto picks Rows on devices of type "cpu", Tiled elsewhere. Where the device limits an
// invocation's loop iterations (DeviceCapabilities::max_loop_iterations) and Tiled's key loop
// would pass the limit, Rows (which splits the keys) runs even when Tiled is asked for.
struct AttentionTuning {
  enum class Algo { Auto, Tiled, Rows };
  // Auto defers to the environment variable TORCH_VK_ATTENTION_ALGO=tiled|rows|auto, read at
  // every launch (so a test can switch strategies between calls), then to the device type.
  Algo algo = Algo::Auto;
  uint32_t rows_workgroup = 64;  // invocations (query rows) per workgroup of Rows
  // Rows: pass the dtypes, the vector-access flags and the head dims as specialization
  // constants (one pipeline per combination); false: all from the parameter block, scalar
  // access only (one pipeline per head-dim bound).
  bool rows_specialize = true;
  // Tiled: keys per split-KV chunk (> 0 forces splitting, rounded up to whole tiles of 16;
  // -1 never splits; 0: TORCH_VK_ATTENTION_SPLIT_KEYS, else split when the query tiles give
  // fewer than 256 workgroups over at least 512 keys). See shaders/attention.comp.
  int64_t split_keys = 0;
  // Tiled forward and fused backward: sum each row's partial dot products with subgroup
  // shuffles (the .subgroup shader variants) where the device has them and its subgroups
  // hold whole rows; false: through shared memory. TORCH_VK_ATTENTION_SUBGROUP=0 (read at
  // every launch) also turns them off.
  bool subgroup_sums = true;
  // The cooperative-matrix forward (shaders/attention_coopmat.comp) for float16 / bfloat16
  // with head dims up to 128:
  //   Auto     where the device has 16 x 16 x 16 cooperative matrices of the dtype, the
  //            Tiled strategy applies, split-KV would not (enough query rows) and the
  //            self-check at first use passed
  //   Off      never (TORCH_VK_ATTENTION_COOPMAT=0; TORCH_VK_DISABLE_COOPMAT=1 hides the
  //            device's cooperative matrices altogether)
  //   Emulate  the emulated variants (scalar code for the matrix operations) on any device and
  //            for any strategy, no self-check: the tests' stand-in where the hardware has no
  //            cooperative matrices (TORCH_VK_ATTENTION_COOPMAT=emulate)
  // Auto defers to TORCH_VK_ATTENTION_COOPMAT=0|emulate|auto, read at every launch.
  enum class Coopmat { Auto, Off, Emulate };
  Coopmat coopmat = Coopmat::Auto;
  // The emulation's tile: subgroups per workgroup, keys per tile and the subgroup size it
  // emulates (0: 2 subgroups of 32 lanes, 32 keys at head dims <= 64 and 16 above, sized for
  // lavapipe's 32 KiB of shared memory); TORCH_VK_ATTENTION_COOPMAT_TILE=warps,keys,sg at
  // every launch. (The real kernel: 4 subgroups of the device's size, 64 / 32 keys.)
  uint32_t coopmat_warps = 0, coopmat_keys = 0, coopmat_sg = 0;
  // Tests: the self-check sees one wrong value (TORCH_VK_ATTENTION_COOPMAT_SELF_CHECK=fail).
  bool coopmat_fail_self_check = false;
};
AttentionTuning& attention_tuning();

// State of the cooperative-matrix attention for `dtype` (float16 / bfloat16) on this stream's
// device: "unavailable" (no such matrices, no shader, or Off), "unchecked", "passed" or
// "failed" (its self-check), as gemm_coopmat_state.
const char* attention_coopmat_state(Stream& stream, DType dtype);
// Forgets this device's self-check results (tests).
void attention_coopmat_forget_self_check(Stream& stream);

// The strategy of the last attention forward recorded in this process: "rows", "tiled",
// "split" (split-KV), "coopmat" or "coopmat_emulated"; "" before the first.
const char* last_attention_algorithm();
// The passes of the last attention_backward recorded: "fused" (the portable kernels),
// "coopmat" or "coopmat_emulated"; "" before the first. (The GEMM recomputation in
// src/aten/ops_attention.cpp does not go through attention_backward.)
const char* last_attention_backward_algorithm();

// Whether the tiled kernels with `tpr` invocations per row take their .subgroup variants.
bool attention_subgroup_sums(Stream& stream, int64_t tpr);

// The strategy attention_forward uses on this stream's device (never Auto).
AttentionTuning::Algo attention_algorithm(Stream& stream);

// Records the forward pass. Empty batch / heads / L record nothing; S == 0 gives out = 0 and
// lse = -inf. Throws std::invalid_argument for unsupported dtypes, head dims above
// kAttentionMaxHeadDim or below 1, heads not a multiple of group, null or misaligned addresses,
// element offsets beyond the 32-bit index range, or a device with too little shared memory.
void attention_forward(Stream& stream, const AttentionForward& problem);

// The backward's recomputation, in place on `scores` (float32, contiguous [batch, heads, L, S],
// holding q . k^T): p = exp(scale * scores + bias - lse) with the exclusions of the forward
// pass (causal, boolean mask) and of rows whose lse is -inf giving 0. Uses batch, heads, L, S,
// scale, causal, mask / mask_strides, dropout and lse (float32 [batch, heads, L]) of
// `problem`; q's dtype only for a float mask's dtype. With dropout, `dropped` (float32, the
// scores' layout, required) gets p * keep / (1 - dropout.p).
void attention_probabilities(Stream& stream, const AttentionForward& problem, Operand scores,
                             Operand dropped = {0, DType::Float32});

// The fused backward (shaders/attention_backward.comp): the forward's problem (sizes, scale,
// causal, mask, q, k, v, out = the forward's output O, lse = its logsumexp) and the gradients:
// grad_out (dO) in, grad_q / grad_k / grad_v out, all in q's dtype with the head dim
// contiguous. Two passes recompute the probabilities from lse tile by tile (nothing of size
// L x S is stored): dq (and D = rowsum(dO * O), in a float32 scratch buffer), then dk and dv
// with every query head of a key head summed by the key's own invocations (GQA without
// atomics), dropout regenerated from forward.dropout. With grad_bias (float32 contiguous
// [batch, heads, L, S], zero-filled by the caller) the dq pass also writes d(score) of every
// pair it visits: the gradient of an additive float mask before its broadcast is summed.
struct AttentionBackward {
  AttentionForward forward;
  Operand grad_out, grad_q, grad_k, grad_v;
  AttentionStrides grad_out_strides, grad_q_strides, grad_k_strides, grad_v_strides;
  Operand grad_bias{0, DType::Float32};
};

// Largest head dim of the fused backward.
constexpr int64_t kAttentionBackwardMaxHeadDim = 256;

// Whether attention_backward runs `problem` on this stream's device: head dims within
// kAttentionBackwardMaxHeadDim, batch * heads and the tiles within the grid limits, the
// passes' loops within the device's loop limit (lavapipe), enough shared memory.
bool attention_backward_supported(Stream& stream, const AttentionBackward& problem);

// Records both passes. Throws std::invalid_argument for what attention_backward_supported
// rejects and for the forward's argument errors.
void attention_backward(Stream& stream, const AttentionBackward& problem);

}  // namespace tvk::kernels
