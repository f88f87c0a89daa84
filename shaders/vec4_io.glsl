// Vector row I/O for float32 math on float32 / float16 / bfloat16 rows: one 16-byte (float32)
// or 8-byte (float16 / bfloat16) access moves four elements. Include after common.glsl.
//
// Contract of every `vec` access: the launcher checked that the row start is 4-element
// aligned (the address is a multiple of 4 * element size and the row length / strides are
// multiples of 4), so the vector reference is aligned and never crosses the row's end.
#ifndef TVK_VEC4_IO_GLSL
#define TVK_VEC4_IO_GLSL

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer RefVec4 { vec4 v; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer RefUVec2 { uvec2 v; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer RefVec4Out { vec4 v; };
layout(buffer_reference, std430, buffer_reference_align = 8) writeonly buffer RefUVec2Out { uvec2 v; };

// Elements 4c .. 4c+3 of the row starting at element `row` of `base`, 0 from element n on.
// Without `vec`, four scalar loads of any supported dtype.
vec4 load_row4(uint64_t base, int dt, int row, int c, int n, bool vec) {
  const int d = 4 * c;
  if (vec) {
    if (dt == DT_FLOAT32) return RefVec4(tvk_elem_addr(base, row + d, 2)).v;
    const uvec2 w = RefUVec2(tvk_elem_addr(base, row + d, 1)).v;
    if (dt == DT_FLOAT16)
      return vec4(tvk_half_to_float(w.x & 0xffffu), tvk_half_to_float(w.x >> 16),
                  tvk_half_to_float(w.y & 0xffffu), tvk_half_to_float(w.y >> 16));
    return vec4(tvk_bf16_to_float(w.x & 0xffffu), tvk_bf16_to_float(w.x >> 16),
                tvk_bf16_to_float(w.y & 0xffffu), tvk_bf16_to_float(w.y >> 16));
  }
  vec4 r = vec4(0.0);
  if (d < n) r.x = load_f32(base, dt, row + d);
  if (d + 1 < n) r.y = load_f32(base, dt, row + d + 1);
  if (d + 2 < n) r.z = load_f32(base, dt, row + d + 2);
  if (d + 3 < n) r.w = load_f32(base, dt, row + d + 3);
  return r;
}

// Stores elements 4c .. 4c+3 of the row starting at element `row` with one vector access
// (the `vec` contract above; dt is float32, float16 or bfloat16).
void store_row4(uint64_t base, int dt, int row, int c, vec4 x) {
  const int d = 4 * c;
  if (dt == DT_FLOAT32) {
    RefVec4Out(tvk_elem_addr(base, row + d, 2)).v = x;
  } else if (dt == DT_FLOAT16) {
    RefUVec2Out(tvk_elem_addr(base, row + d, 1)).v =
        uvec2(tvk_float_to_half(x.x) | (tvk_float_to_half(x.y) << 16),
              tvk_float_to_half(x.z) | (tvk_float_to_half(x.w) << 16));
  } else {
    RefUVec2Out(tvk_elem_addr(base, row + d, 1)).v =
        uvec2(tvk_float_to_bf16(x.x) | (tvk_float_to_bf16(x.y) << 16),
              tvk_float_to_bf16(x.z) | (tvk_float_to_bf16(x.w) << 16));
  }
}

// Stores the elements of chunk c (4c .. 4c+3) that lie before element n: one vector access
// with `vec`, scalar stores of any supported dtype otherwise.
void store_row4_masked(uint64_t base, int dt, int row, int c, int n, bool vec, vec4 x) {
  if (vec) {
    store_row4(base, dt, row, c, x);
    return;
  }
  const int d = 4 * c;
  if (d < n) store_f32(base, dt, row + d, x.x);
  if (d + 1 < n) store_f32(base, dt, row + d + 1, x.y);
  if (d + 2 < n) store_f32(base, dt, row + d + 2, x.z);
  if (d + 3 < n) store_f32(base, dt, row + d + 3, x.w);
}

#endif  // TVK_VEC4_IO_GLSL
