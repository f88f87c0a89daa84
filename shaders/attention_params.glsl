// The attention kernels' parameter blocks, uploaded by src/kernels/attention*.cpp: Params for
// the forward kernels (shaders/attention.comp, attention_coopmat.comp), BwdParams for the
// backward ones (attention_backward.comp, attention_backward_coopmat.comp). Each kernel takes
// its block's address as its only push constant. Include after common.glsl and
// attention_mask.glsl.
#ifndef TVK_ATTENTION_PARAMS_GLSL
#define TVK_ATTENTION_PARAMS_GLSL

// Mirrors AttentionParams in src/kernels/attention_internal.h. Element strides; the head dim is
// contiguous (stride 1) in q, k, v and out.
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t q, k, v, o, lse, mask;          //  0
  int q_sb, q_sh, q_sl;                    // 48 q strides: batch, head, row
  int k_sb, k_sh, k_sl;                    // 60
  int v_sb, v_sh, v_sl;                    // 72
  int o_sb, o_sh, o_sl;                    // 84
  int m_sb, m_sh, m_sl, m_ss;              // 96 mask strides (0: broadcast)
  int heads, group, L, S, E, Ev;           // 112
  int dtype, mask_dtype, flags;            // 136 (flags: 1 causal, 2 mask, 4 dropout)
  float scale;                             // 148
  int batch;                               // 152
  int pad_;                                // 156
  uint64_t state;                          // 160 ROWS split state (0: none)
  int row_begin, row_end, j_begin, j_end;  // 168 ROWS: rows and keys of this dispatch
  uvec2 drop_seed;                         // 184 dropout: Philox key
  uvec2 drop_counter;                      // 192 dropout: Philox counter words 2, 3
  uint drop_threshold;                     // 200 dropout: a key is kept below this
  float drop_scale;                        // 204 1 / (1 - dropout_p); 1 without dropout
  uint64_t dropped;                        // 208 PROBS: p * z written here (0: none)
};                                         // 216 bytes

// Mirrors AttentionBackwardParams in src/kernels/attention_internal.h. Element strides (batch,
// head, row); the head dim is contiguous in every tensor.
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer BwdParams {
  uint64_t q, k, v, o, dout, lse, mask, dq, dk, dv, d;  //   0 (d: D, float32 [b * h * L])
  int q_sb, q_sh, q_sl;                                 //  88
  int k_sb, k_sh, k_sl;                                 // 100
  int v_sb, v_sh, v_sl;                                 // 112
  int o_sb, o_sh, o_sl;                                 // 124
  int do_sb, do_sh, do_sl;                              // 136
  int dq_sb, dq_sh, dq_sl;                              // 148
  int dk_sb, dk_sh, dk_sl;                              // 160
  int dv_sb, dv_sh, dv_sl;                              // 172
  int m_sb, m_sh, m_sl, m_ss;                           // 184 mask strides (0: broadcast)
  int batch, heads, group, L, S, E, Ev;                 // 200
  int dtype, mask_dtype, flags;                         // 228 (flags: 1 causal, 2 mask, 4 dropout)
  float scale;                                          // 240
  int pad0;                                             // 244
  uvec2 drop_seed;                                      // 248 dropout: Philox key
  uvec2 drop_counter;                                   // 256 dropout: Philox counter words 2, 3
  uint drop_threshold;                                  // 264 dropout: a key is kept below this
  float drop_scale;                                     // 268 1 / (1 - dropout_p)
  uint64_t dbias;                                       // 272 DQ pass: ds_ij at (bh * L + i) * S
                                                        //     + j, float32 (0: not written)
};                                                      // 280 bytes

layout(push_constant) uniform Push { uint64_t params; } pc;

const float NEG_INF = -1.0 / 0.0;

// Score (i, j) of (b, h) is excluded, or the additive bias to apply to x (inout), for either
// block P. A macro: glslang does not overload functions on buffer-reference types.
#define excluded(P, b, h, i, j, x)                                                      \
  attention_excluded((P).flags, (P).mask, (P).mask_dtype,                               \
                     (b) * (P).m_sb + (h) * (P).m_sh + (i) * (P).m_sl + (j) * (P).m_ss, \
                     (i), (j), x)

#endif  // TVK_ATTENTION_PARAMS_GLSL
