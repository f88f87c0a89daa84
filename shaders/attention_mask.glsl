// The attention kernels' key exclusion and dropout (shaders/attention.comp,
// attention_backward.comp). Include after common.glsl.
#ifndef TVK_ATTENTION_MASK_GLSL
#define TVK_ATTENTION_MASK_GLSL

#include "philox.glsl"

// Whether score (i, j) is excluded: flags bit 0 (is_causal) and j > i, or flags bit 1 with a
// boolean mask false at element mi. A float mask instead adds its element mi to x.
bool attention_excluded(int flags, uint64_t mask, int mask_dtype, int mi, int i, int j,
                        inout float x) {
  if ((flags & 1) != 0 && j > i) return true;
  if ((flags & 2) != 0) {
    if (mask_dtype == DT_BOOL) return uint(RefU8(tvk_elem_addr(mask, mi, 0)).v) == 0u;
    x += load_f32(mask, mask_dtype, mi);
  }
  return false;
}

// Dropout (flags bit 2) of score (row r = (b * heads + h) * L + i, key j): kept when the
// 32-bit number drawn for it is below `threshold` (about (1 - dropout_p) * 2^32). The numbers
// of keys 4q .. 4q + 3 of a row are the four words of
//   philox(counter = (q, r, c0, c0_hi), key = seed)
// with (seed, c0 = offset / 4) the generator's for the launch (src/aten/generator.h): they
// depend only on (seed, offset, r, j), so the forward kernels of every strategy and both
// backward paths regenerate the same decisions without storing them.
uvec4 attention_dropout_block(uvec2 seed, uvec2 counter, int r, int j) {
  return philox(uvec4(uint(j) >> 2, uint(r), counter), seed);
}
bool attention_dropout_keep(uvec4 block, uint threshold, int j) {
  const uint x = (j & 3) == 0 ? block.x : (j & 3) == 1 ? block.y : (j & 3) == 2 ? block.z : block.w;
  return x < threshold;
}

#if ATTENTION_SUBGROUP_SUM
// The sum of `v` over the TPR invocations of one row (consecutive invocations, TPR a power of
// two dividing the subgroup size): a butterfly of subgroupShuffleXor, every lane getting the
// same bits (each step adds the same two values on both sides). Called in uniform control
// flow only. The variants without it sum through shared memory and a barrier.
float attention_lane_sum(float v, int tpr) {
  for (int o = 1; o < tpr; o <<= 1) v += subgroupShuffleXor(v, uint(o));
  return v;
}
#endif

#endif  // TVK_ATTENTION_MASK_GLSL
