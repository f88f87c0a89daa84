// The convolution kernels' push constants and geometry block (shaders/conv.comp,
// conv_coopmat.comp), mirrored by ConvPush / ConvGeometryBlock in src/kernels/conv.cpp, and
// the operand dtypes (specialization constants 1..4, or the push constants where they are -1).
// Include after common.glsl.
#ifndef TVK_CONV_PARAMS_GLSL
#define TVK_CONV_PARAMS_GLSL

layout(constant_id = 1) const int SPEC_SRC_DT = -1;
layout(constant_id = 2) const int SPEC_DST_DT = -1;
layout(constant_id = 3) const int SPEC_AUX_DT = -1;
layout(constant_id = 4) const int SPEC_AUX2_DT = -1;

layout(push_constant) uniform Push {
  uint64_t src;       //  0: X (im2col, direct) or col (col2im)
  uint64_t dst;       //  8: col (im2col), dX (col2im) or Y (direct)
  uint64_t aux;       // 16: bias per channel of dX (col2im) or W (direct); 0: none
  uint64_t aux2;      // 24: bias per output channel (direct); 0: none
  uint64_t geometry;  // 32: ConvGeometry
  int total;          // 40: invocations
  int src_dtype;      // 44
  int dst_dtype;      // 48
  int aux_dtype;      // 52
  int aux2_dtype;     // 56
  int pad0;           // 60 implicit weight gradient: samples per batch split (0: none)
} pc;                 // 64 bytes

// Sizes and strides in elements; index 0 = depth, 1 = height, 2 = width. Plain int arrays:
// with ivec4 members, lavapipe returned wrong .w components from this block.
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ConvGeometry {
  int in_size[4];      // ID, IH, IW, C       (C: channels of X / dX)
  int out_size[4];     // OD, OH, OW, COUT    (COUT: channels of Y, direct only)
  int ksize[4];        // KD, KH, KW, K
  int stride[4];       // [3] = CG (direct: input channels per group)
  int pad[4];          // [3] = COUT_G (direct: output channels per group)
  int dil[4];
  int x_stride[4];     // X / dX strides of d, h, w, c
  int x_stride_n[4];   // [0] = X / dX stride of n
  int col_stride[4];   // col (or Y): [0] = n, [1] = r (Y: channel); l is contiguous (Y: [2] = l)
};

ivec4 v4(int a[4]) { return ivec4(a[0], a[1], a[2], a[3]); }

int g_src_dt, g_dst_dt, g_aux_dt, g_aux2_dt;

// The operand dtypes of this dispatch (call once, first thing in main).
void read_dtypes() {
  g_src_dt = SPEC_SRC_DT >= 0 ? SPEC_SRC_DT : pc.src_dtype;
  g_dst_dt = SPEC_DST_DT >= 0 ? SPEC_DST_DT : pc.dst_dtype;
  g_aux_dt = SPEC_AUX_DT >= 0 ? SPEC_AUX_DT : pc.aux_dtype;
  g_aux2_dt = SPEC_AUX2_DT >= 0 ? SPEC_AUX2_DT : pc.aux2_dtype;
}

#endif  // TVK_CONV_PARAMS_GLSL
