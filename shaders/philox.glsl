// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): the
// counter-based generator every random draw on the device uses (shaders/random.comp, the
// attention kernels' dropout). Ten rounds of the published multipliers and Weyl key steps.
#ifndef TVK_PHILOX_GLSL
#define TVK_PHILOX_GLSL

uvec4 philox(uvec4 ctr, uvec2 key) {
  for (int r = 0; r < 10; ++r) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, ctr.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, ctr.z, hi1, lo1);
    ctr = uvec4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
    key += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return ctr;
}

#endif  // TVK_PHILOX_GLSL
