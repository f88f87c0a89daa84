// L2: what the attention forward's launchers share (src/kernels/attention.cpp, the portable
// kernels, and attention_coopmat.cpp, the cooperative-matrix one). No torch headers.
#pragma once

#include <cstdint>

#include "kernels/attention.h"
#include "runtime/stream.h"

namespace tvk::kernels::detail {

// Mirrors `Params` in shaders/attention_params.glsl (std430).
struct AttentionParams {
  uint64_t q, k, v, out, lse, mask;
  int32_t q_sb, q_sh, q_sl;
  int32_t k_sb, k_sh, k_sl;
  int32_t v_sb, v_sh, v_sl;
  int32_t o_sb, o_sh, o_sl;
  int32_t m_sb, m_sh, m_sl, m_ss;
  int32_t heads, group, L, S, E, Ev;
  int32_t dtype, mask_dtype, flags;
  float scale;
  int32_t batch;
  int32_t pad;
  uint64_t state;  // Rows split: running (m, l, acc) of the row block (0: single pass)
  int32_t row_begin, row_end, j_begin, j_end;
  uint32_t drop_seed[2], drop_counter[2];  // dropout (flags bit 2): Philox key and counter
  uint32_t drop_threshold;                 // a key is kept when its number is below this
  float drop_scale;                        // 1 / (1 - p); 1 without dropout
  uint64_t dropped;                        // Probs: p * z written here (0: none)
};
static_assert(sizeof(AttentionParams) == 216);

// Mirrors `BwdParams` in shaders/attention_params.glsl (std430).
struct AttentionBackwardParams {
  uint64_t q, k, v, o, dout, lse, mask, dq, dk, dv, d;
  int32_t q_sb, q_sh, q_sl;
  int32_t k_sb, k_sh, k_sl;
  int32_t v_sb, v_sh, v_sl;
  int32_t o_sb, o_sh, o_sl;
  int32_t do_sb, do_sh, do_sl;
  int32_t dq_sb, dq_sh, dq_sl;
  int32_t dk_sb, dk_sh, dk_sl;
  int32_t dv_sb, dv_sh, dv_sl;
  int32_t m_sb, m_sh, m_sl, m_ss;
  int32_t batch, heads, group, L, S, E, Ev;
  int32_t dtype, mask_dtype, flags;
  float scale;
  int32_t pad0;
  uint32_t drop_seed[2], drop_counter[2];
  uint32_t drop_threshold;
  float drop_scale;
  uint64_t dbias;  // DQ pass: ds written here (0: not)
};
static_assert(sizeof(AttentionBackwardParams) == 280);

// The forward's argument checks (std::invalid_argument, as attention_forward documents) and
// its parameter block; a default block for empty problems.
AttentionParams forward_params(const AttentionForward& p);

// The backward's argument checks (as attention_backward documents; non-empty batch and heads)
// and its parameter block, D left 0.
AttentionBackwardParams backward_params(Stream& stream, const AttentionBackward& problem);

// What a forward dispatch reads (q, k, v, the mask) and writes (out, logsumexp).
AccessSet attention_forward_accesses(const AttentionForward& p);

// Keys per split-KV chunk the tiled kernel would use for `p` with `tiles` query tiles of 16
// rows, 0 for no split (see AttentionTuning::split_keys).
int64_t attention_split_keys(const AttentionForward& p, int64_t tiles);

// Records `p` (validated, its parameter block `a` filled) with the portable kernels: Rows or
// Tiled (with split-KV) by attention_algorithm and the device's loop limit.
void record_attention_portable(Stream& stream, const AttentionForward& p, AttentionParams a);

// Records `p` on the cooperative-matrix kernel (the real one after its self-check passed on
// this device, or the emulation where AttentionTuning / TORCH_VK_ATTENTION_COOPMAT asks for
// it) and returns true, or returns false (nothing recorded) where that kernel does not take
// `p`: dtype other than float16 / bfloat16, head dims above 128, no cooperative matrices, a
// CPU device, few query rows (decode, where split-KV pays), the self-check failed.
bool try_attention_coopmat(Stream& stream, const AttentionForward& p, const AttentionParams& a);

// What the backward's DQ and DKV passes read and write (D: the float32 [batch * heads * L]
// scratch the DQ pass fills and the DKV pass reads).
void backward_accesses(const AttentionBackward& problem, uint64_t d, AccessSet* dq_pass,
                       AccessSet* dkv_pass);

// Records `problem` (validated, its parameter block filled but for D) with the portable fused
// passes (shaders/attention_backward.comp).
void record_attention_backward_portable(Stream& stream, const AttentionBackward& problem,
                                        const AttentionBackwardParams& a);

// The backward on the cooperative-matrix passes where try_attention_coopmat would take the
// problem's forward (the same dtype, head-dim, device and self-check conditions); false
// (nothing recorded) otherwise.
bool try_attention_backward_coopmat(Stream& stream, const AttentionBackward& problem,
                                    const AttentionBackwardParams& a);

// The algorithm name of the last attention forward recorded in this process ("rows",
// "tiled", "split", "coopmat", "coopmat_emulated").
void set_last_attention_algorithm(const char* name);
// The same for attention_backward ("fused", "coopmat", "coopmat_emulated").
void set_last_attention_backward_algorithm(const char* name);

}  // namespace tvk::kernels::detail
