// The forward attention kernels' parameter block (shaders/attention.comp,
// attention_coopmat.comp), uploaded by src/kernels/attention.cpp: the kernels take its
// address as their only push constant. Include after common.glsl and attention_mask.glsl.
#ifndef TVK_ATTENTION_PARAMS_GLSL
#define TVK_ATTENTION_PARAMS_GLSL

// Mirrors AttentionParams in src/kernels/attention.cpp. Element strides; the head dim is
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

layout(push_constant) uniform Push { uint64_t params; } pc;

const float NEG_INF = -1.0 / 0.0;

// Score (i, j) of (b, h) is excluded, or the additive bias to apply (out parameter).
bool excluded(Params P, int b, int h, int i, int j, inout float x) {
  return attention_excluded(P.flags, P.mask, P.mask_dtype,
                            b * P.m_sb + h * P.m_sh + i * P.m_sl + j * P.m_ss, i, j, x);
}

#endif  // TVK_ATTENTION_PARAMS_GLSL
