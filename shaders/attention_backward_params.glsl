// The attention backward kernels' parameter block (shaders/attention_backward.comp,
// attention_backward_coopmat.comp), uploaded by src/kernels/attention.cpp (the kernels take its
// address as their only push constant), and the recomputed probability of one score. Include
// after common.glsl, math.glsl and attention_mask.glsl.
#ifndef TVK_ATTENTION_BACKWARD_PARAMS_GLSL
#define TVK_ATTENTION_BACKWARD_PARAMS_GLSL

// Mirrors AttentionBackwardParams in src/kernels/attention.cpp. Element strides (batch,
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

bool excluded(BwdParams P, int b, int h, int i, int j, inout float x) {
  return attention_excluded(P.flags, P.mask, P.mask_dtype,
                            b * P.m_sb + h * P.m_sh + i * P.m_sl + j * P.m_ss, i, j, x);
}

// p_ij z_ij (pz) and ds_ij from the summed dot products (s = q . k, dp = dO . v); `z`: z_ij
// (1 without dropout).
void probability(BwdParams P, bool live, int b, int h, int i, int j, float s, float dp,
                 float lse, float d_i, float z, out float pz, out float ds) {
  float x = P.scale * s;
  if (!live || lse == NEG_INF || excluded(P, b, h, i, j, x) || x == NEG_INF) {
    pz = 0.0;
    ds = 0.0;
    return;
  }
  const float p = tvk_exp(x - lse);
  pz = p * z;
  ds = p * (z * dp - d_i);
}

#endif  // TVK_ATTENTION_BACKWARD_PARAMS_GLSL
