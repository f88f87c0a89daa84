// The attention kernels' key exclusion (shaders/attention.comp, attention_backward.comp).
// Include after common.glsl.
#ifndef TVK_ATTENTION_MASK_GLSL
#define TVK_ATTENTION_MASK_GLSL

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

#endif  // TVK_ATTENTION_MASK_GLSL
