// The implicit-GEMM convolution's problem and index math, shared by the portable tiled kernel
// (shaders/conv.comp OP 3) and the cooperative-matrix one (conv_coopmat.comp): per group grp
// a GEMM C = A @ B of M rows, N columns and R reduced elements whose operands are gathered
// from the convolution's tensors (see conv.comp's header for the three modes).
//
// Include after conv_params.glsl, having declared the specialization constant CONV_MODE.
// Call setup_implicit() once, then per z index of the grid select_group(); a_offset /
// b_offset give the element offsets of A (in pc.aux) and B (in pc.src), store_c writes C.
#ifndef TVK_CONV_IMPLICIT_GLSL
#define TVK_CONV_IMPLICIT_GLSL

const int MODE_FORWARD = 0, MODE_INPUT_GRAD = 1, MODE_WEIGHT_GRAD = 2;

// The problem (set once by setup_implicit).
ivec3 g_isz, g_osz, g_ks, g_st, g_pd, g_dl;
ivec4 g_xs, g_ys;
int g_xsn, g_K, g_L, g_I, g_CG, g_COUT_G, g_M, g_R, g_N, g_groups;
// Weight gradient split over the batch (pc.pad0 samples per split, 0: none): the first sample
// of the current split and the element offset of its partial dW (set per split by
// select_group).
int g_n0 = 0, g_dst0 = 0, g_per_split = 0, g_splits = 1;

ivec3 position(int linear, ivec3 size) {
  return ivec3(linear / (size.z * size.y), (linear / size.z) % size.y, linear % size.z);
}

// The offset in X of the im2col element for column position (n, l) and row r = c * K + k (c in
// the group); -1 in the padding.
int im2col_offset(int grp, int n, int l, int r) {
  const int c = r / g_K, k = r - c * g_K;
  const ivec3 ip = position(l, g_osz) * g_st - g_pd + position(k, g_ks) * g_dl;
  if (any(lessThan(ip, ivec3(0))) || any(greaterThanEqual(ip, g_isz))) return -1;
  return n * g_xsn + (grp * g_CG + c) * g_xs.w + ip.x * g_xs.x + ip.y * g_xs.y + ip.z * g_xs.z;
}

// The offset in pc.aux of A[m][r] of group grp (m < M, r < R). Forward: W[co][c, k] with
// r = c * K + k (row m = output channel). Input gradient: W^T, r = co * K + k over the group's
// output channels (row m = input channel). Weight gradient: dY[n][co][l] with r = n * L + l
// (row m = output channel).
int a_offset(int grp, int m, int r) {
  if (CONV_MODE == MODE_FORWARD) return (grp * g_COUT_G + m) * g_CG * g_K + r;
  if (CONV_MODE == MODE_WEIGHT_GRAD) {
    const int n = r / g_L, l = r - n * g_L;
    return (g_n0 + n) * g_ys.x + (grp * g_COUT_G + m) * g_ys.y + l * g_ys.z;
  }
  const int co = r / g_K, k = r - co * g_K;
  return ((grp * g_COUT_G + co) * g_CG + m) * g_K + k;
}

// a_offset of A[m][r + u], u = 0 .. 3, for m < M (r + u < R is the caller's to check): the
// divisions once per run of 4, the general path where the run crosses a sample (weight
// gradient) or an output channel (input gradient).
void a_offsets4(int grp, int m, int r, out int at[4]) {
  if (CONV_MODE == MODE_FORWARD) {
    const int base = a_offset(grp, m, r);
    [[unroll]] for (int u = 0; u < 4; ++u) at[u] = base + u;
  } else if (CONV_MODE == MODE_WEIGHT_GRAD) {
    const int n = r / g_L, l = r - n * g_L;
    const int base = (g_n0 + n) * g_ys.x + (grp * g_COUT_G + m) * g_ys.y + l * g_ys.z;
    [[unroll]] for (int u = 0; u < 4; ++u)
      at[u] = l + u < g_L ? base + u * g_ys.z : a_offset(grp, m, r + u);
  } else {
    const int co = r / g_K, k = r - co * g_K;
    const int base = ((grp * g_COUT_G + co) * g_CG + m) * g_K + k;
    [[unroll]] for (int u = 0; u < 4; ++u) at[u] = k + u < g_K ? base + u : a_offset(grp, m, r + u);
  }
}

// The offset in pc.src of B[r][j] of group grp (r < R, j < N), -1 where B is 0. Forward: the
// im2col column of X (j = n * L + output position). Input gradient: dY at the output position
// that kernel offset k maps onto input position j = n * I + i (none where it falls between
// strides or outside). Weight gradient: the im2col of X transposed (r = n * L + l,
// j = c * K + k).
int b_offset(int grp, int r, int j) {
  if (CONV_MODE == MODE_FORWARD) {
    const int n = j / g_L;
    return im2col_offset(grp, n, j - n * g_L, r);
  }
  if (CONV_MODE == MODE_WEIGHT_GRAD) {
    const int n = r / g_L;
    return im2col_offset(grp, g_n0 + n, r - n * g_L, j);
  }
  const int n = j / g_I, i = j - n * g_I;
  const int co = r / g_K, k = r - co * g_K;
  const ivec3 t = position(i, g_isz) + g_pd - position(k, g_ks) * g_dl;
  const ivec3 o = t / g_st;
  if (any(lessThan(t, ivec3(0))) || any(notEqual(o * g_st, t)) || any(greaterThanEqual(o, g_osz)))
    return -1;
  const int l = (o.x * g_osz.y + o.y) * g_osz.z + o.z;
  return n * g_ys.x + (grp * g_COUT_G + co) * g_ys.y + l * g_ys.z;
}

// b_offset of B[r][j + u], u = 0 .. 3, for r < R and j < N (-1 also for j + u >= N). The four
// columns mostly lie in one row of positions (forward: output positions, input gradient: input
// positions; weight gradient: kernel offsets of one row of the kernel) and share everything but
// the width coordinate, so the divisions run once per run of 4; a column in the next row takes
// the general path.
void b_offsets4(int grp, int r, int j, out int at[4]) {
  if (CONV_MODE == MODE_FORWARD) {
    const int n = j / g_L, l = j - n * g_L;
    const int c = r / g_K, k = r - c * g_K;
    const ivec3 o = position(l, g_osz);
    const ivec3 ip = o * g_st - g_pd + position(k, g_ks) * g_dl;
    const bool rows = ip.x >= 0 && ip.x < g_isz.x && ip.y >= 0 && ip.y < g_isz.y;
    const int base = n * g_xsn + (grp * g_CG + c) * g_xs.w + ip.x * g_xs.x + ip.y * g_xs.y;
    [[unroll]] for (int u = 0; u < 4; ++u) {
      const int iw = ip.z + u * g_st.z;
      if (o.z + u < g_osz.z) at[u] = rows && iw >= 0 && iw < g_isz.z ? base + iw * g_xs.z : -1;
      else at[u] = j + u < g_N ? b_offset(grp, r, j + u) : -1;
    }
  } else if (CONV_MODE == MODE_INPUT_GRAD) {
    const int n = j / g_I, i = j - n * g_I;
    const int co = r / g_K, k = r - co * g_K;
    const ivec3 p = position(i, g_isz);
    const ivec3 t = p + g_pd - position(k, g_ks) * g_dl;
    const ivec2 o = t.xy / g_st.xy;
    const bool rows = all(greaterThanEqual(t.xy, ivec2(0))) && all(equal(o * g_st.xy, t.xy)) &&
                      all(lessThan(o, g_osz.xy));
    const int base = n * g_ys.x + (grp * g_COUT_G + co) * g_ys.y + (o.x * g_osz.y + o.y) * g_osz.z * g_ys.z;
    [[unroll]] for (int u = 0; u < 4; ++u) {
      const int tw = t.z + u, ow = tw / g_st.z;
      if (p.z + u < g_isz.z)
        at[u] = rows && tw >= 0 && ow * g_st.z == tw && ow < g_osz.z ? base + ow * g_ys.z : -1;
      else
        at[u] = j + u < g_N ? b_offset(grp, r, j + u) : -1;
    }
  } else {
    const int n = r / g_L, l = r - n * g_L;
    const int c = j / g_K, k = j - c * g_K;
    const ivec3 kp = position(k, g_ks);
    const ivec3 ip = position(l, g_osz) * g_st - g_pd + kp * g_dl;
    const bool rows = ip.x >= 0 && ip.x < g_isz.x && ip.y >= 0 && ip.y < g_isz.y;
    const int base = (g_n0 + n) * g_xsn + (grp * g_CG + c) * g_xs.w + ip.x * g_xs.x + ip.y * g_xs.y;
    [[unroll]] for (int u = 0; u < 4; ++u) {
      const int iw = ip.z + u * g_dl.z;
      if (kp.z + u < g_ks.z) at[u] = rows && iw >= 0 && iw < g_isz.z ? base + iw * g_xs.z : -1;
      else at[u] = j + u < g_N ? b_offset(grp, r, j + u) : -1;
    }
  }
}

// Stores C[m][j] (+ bias) of group grp: Y[n][co][l] (forward), dX[n][c][i] (input
// gradient) or dW[co][c, k] (weight gradient, contiguous, no bias).
void store_c(int grp, int m, int j, float v) {
  if (CONV_MODE == MODE_WEIGHT_GRAD) {
    store_f32(pc.dst, g_dst_dt, g_dst0 + (grp * g_COUT_G + m) * g_N + j, v);
    return;
  }
  if (CONV_MODE == MODE_FORWARD) {
    const int co = grp * g_COUT_G + m;
    if (pc.aux2 != 0ul) v += load_f32(pc.aux2, g_aux2_dt, co);
    const int n = j / g_L, l = j - n * g_L;
    store_f32(pc.dst, g_dst_dt, n * g_ys.x + co * g_ys.y + l * g_ys.z, v);
    return;
  }
  const int c = grp * g_CG + m;
  if (pc.aux2 != 0ul) v += load_f32(pc.aux2, g_aux2_dt, c);
  const int n = j / g_I, i = j - n * g_I;
  const ivec3 ip = position(i, g_isz);
  store_f32(pc.dst, g_dst_dt, n * g_xsn + c * g_xs.w + ip.x * g_xs.x + ip.y * g_xs.y + ip.z * g_xs.z, v);
}

// Reads the geometry block and sets the problem: M, N and R (the weight gradient's R per
// split), the groups and the batch splits. pc.total: the samples of this dispatch.
void setup_implicit() {
  ConvGeometry g = ConvGeometry(pc.geometry);
  g_isz = ivec3(g.in_size[0], g.in_size[1], g.in_size[2]);
  g_osz = ivec3(g.out_size[0], g.out_size[1], g.out_size[2]);
  g_ks = ivec3(g.ksize[0], g.ksize[1], g.ksize[2]);
  g_st = ivec3(g.stride[0], g.stride[1], g.stride[2]);
  g_pd = ivec3(g.pad[0], g.pad[1], g.pad[2]);
  g_dl = ivec3(g.dil[0], g.dil[1], g.dil[2]);
  g_xs = v4(g.x_stride);
  g_xsn = g.x_stride_n[0];
  g_ys = v4(g.col_stride);  // Y / dY strides: n, channel, position
  g_K = g.ksize[3];
  g_CG = g.stride[3];
  g_COUT_G = g.pad[3];
  g_L = g_osz.x * g_osz.y * g_osz.z;
  g_I = g_isz.x * g_isz.y * g_isz.z;
  if (CONV_MODE == MODE_FORWARD) {
    g_M = g_COUT_G;
    g_R = g_CG * g_K;
    g_N = pc.total * g_L;
  } else if (CONV_MODE == MODE_INPUT_GRAD) {
    g_M = g_CG;
    g_R = g_COUT_G * g_K;
    g_N = pc.total * g_I;
  } else {
    g_M = g_COUT_G;
    g_R = pc.total * g_L;
    g_N = g_CG * g_K;
  }
  g_groups = g.out_size[3] / g_COUT_G;
  // Weight gradient split over the batch: z covers (split, group) pairs, each split summing
  // its pc.pad0 samples into its own partial dW (the launcher adds the partials up).
  const bool split = CONV_MODE == MODE_WEIGHT_GRAD && pc.pad0 > 0;
  g_per_split = split ? pc.pad0 : pc.total;
  g_splits = split ? (pc.total + g_per_split - 1) / g_per_split : 1;
}

// The group of z index gz (< g_groups * g_splits); sets the split's samples, R and partial.
int select_group(int gz) {
  if (g_splits > 1) {
    const int s = gz / g_groups;
    g_n0 = s * g_per_split;
    g_R = min(g_per_split, pc.total - g_n0) * g_L;
    g_dst0 = s * g_groups * g_COUT_G * g_N;
  }
  return gz % g_groups;
}

#endif  // TVK_CONV_IMPLICIT_GLSL
