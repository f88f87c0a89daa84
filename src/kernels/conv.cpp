// Launcher of the convolution family (shaders/conv.comp + the GEMM family).
//
// Every problem is normalized to 3 spatial dims (size-1 leading dims for 1-D / 2-D), then:
//   forward          direct kernel (small (C / groups) * K), or a plain GEMM on X (1x1,
//                    stride 1, no padding), or the implicit GEMM (GPUs: one tiled kernel per
//                    batch chunk gathering the im2col columns from X while loading its tiles,
//                    no column buffer), or per batch chunk: im2col into col [Nc][C*K][L]
//                    then Y[n]_g = W_g @ col[n]_g (+ bias) for every (n, g) (CPU devices,
//                    whose GEMM is tuned for SIMD lanes; float64).
//   backward_input   the implicit GEMM dX = W^T @ dYcol (GPUs: the B tile gathered from dY),
//                    or a GEMM straight into dX (1x1 case), or per chunk:
//                    col[n]_g = W_g^T @ dY[n]_g in the accumulator dtype, then col2im (a
//                    gather, + bias).
//   backward_weight  the implicit GEMM dW = dY @ im2col(X)^T over the whole batch (GPUs, when
//                    its offsets fit 32 bits), or per chunk: col [C*K][Nc*L] (im2col with the batch folded into the
//                    columns) and dY^T [COUT][Nc*L] (an im2col with a 1x1 kernel, skipped
//                    for Nc == 1), then dW_g += dY^T_g @ col_g^T: one GEMM with K = Nc * L.
//                    Several chunks of 16-bit weights accumulate in a float32 temporary.
// The (n, g) pairs of a GEMM step are one batched GEMM when their strides are uniform, else a
// loop over the shorter of the two with the GEMM batched over the other.
// Column buffers are bounded by ConvTuning::column_budget per chunk (at least one sample) and
// by the kernels' 32-bit offsets; they come from the caching allocator and are freed right
// after recording (stream order makes the reuse safe, as in gemm.cpp).
#include "kernels/conv.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/conv_coopmat.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

constexpr const char* kWhere = "tvk::kernels::conv";

// Mirrors `Push` in shaders/conv.comp.
struct ConvPush {
  uint64_t src, dst, aux, aux2, geometry;
  int32_t total, src_dtype, dst_dtype, aux_dtype, aux2_dtype, pad0;
};
static_assert(sizeof(ConvPush) == 64);

// Mirrors `ConvGeometry` in shaders/conv.comp (ivec4 rows).
struct ConvGeometryBlock {
  int32_t in_size[4], out_size[4], ksize[4], stride[4], pad[4], dil[4];
  int32_t x_stride[4], x_stride_n[4], col_stride[4];
};
static_assert(sizeof(ConvGeometryBlock) == 144);

enum class ConvOp { Im2col, Col2im, Direct };

// The problem in 3-D form. Spatial index 0 = depth, 1 = height, 2 = width.
struct Problem {
  int64_t n = 0, c = 0, cout = 0, groups = 1, cg = 0, coutg = 0;
  int64_t in[3], out[3], k[3], st[3], pd[3], dl[3];
  int64_t kvol = 1, l = 1, ivol = 1;  // kernel volume, output positions, input positions
  ComputeKind kind = ComputeKind::Float32;
  DType dtype = DType::Float32;
};

// A tensor's strides in 3-D form: n, c, d, h, w.
struct Strides {
  int64_t n = 0, c = 0, sp[3] = {0, 0, 0};
};

bool is_float(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

Problem normalize(Stream& stream, const ConvShape& s) {
  if (s.spatial < 1 || s.spatial > 3) invalid(kWhere, "spatial must be 1, 2 or 3");
  Problem p;
  p.n = s.batch;
  p.c = s.in_channels;
  p.cout = s.out_channels;
  p.groups = s.groups;
  if (p.n < 0 || p.c < 0 || p.cout < 0) invalid(kWhere, "negative size");
  if (p.groups < 1 || p.c % p.groups != 0 || p.cout % p.groups != 0)
    invalid(kWhere, "groups must be positive and divide both channel counts");
  p.cg = p.c / p.groups;
  p.coutg = p.cout / p.groups;
  const int off = 3 - s.spatial;
  for (int d = 0; d < 3; ++d) {
    const int src = d - off;
    const bool present = src >= 0;
    p.in[d] = present ? s.input[src] : 1;
    p.out[d] = present ? s.output[src] : 1;
    p.k[d] = present ? s.kernel[src] : 1;
    p.st[d] = present ? s.stride[src] : 1;
    p.pd[d] = present ? s.padding[src] : 0;
    p.dl[d] = present ? s.dilation[src] : 1;
    if (p.in[d] < 0 || p.out[d] < 0) invalid(kWhere, "negative spatial size");
    if (p.k[d] < 1 || p.st[d] < 1 || p.dl[d] < 1 || p.pd[d] < 0)
      invalid(kWhere, "kernel, stride and dilation must be positive, padding non-negative");
    if (p.in[d] > kMaxIndex || p.out[d] > kMaxIndex || p.k[d] > kMaxIndex || p.st[d] > kMaxIndex ||
        p.pd[d] > kMaxIndex || p.dl[d] > kMaxIndex ||
        p.k[d] * p.dl[d] > kMaxIndex || p.out[d] * p.st[d] + p.in[d] + p.pd[d] > kMaxIndex)
      invalid(kWhere, "spatial sizes exceed the kernel's 32-bit index range");
  }
  p.kvol = p.k[0] * p.k[1] * p.k[2];
  p.l = p.out[0] * p.out[1] * p.out[2];
  p.ivol = p.in[0] * p.in[1] * p.in[2];
  if (p.kvol > kMaxIndex || p.l > kMaxIndex || p.ivol > kMaxIndex || p.c > kMaxIndex ||
      p.cout > kMaxIndex || p.c * p.kvol > kMaxIndex || p.cout * p.kvol > kMaxIndex)
    invalid(kWhere, "sizes exceed the kernel's 32-bit index range");
  (void)stream;
  return p;
}

void check_operand(const Problem& p, uint64_t address, DType dtype, const char* what) {
  check_dtype(kWhere, dtype, what);
  if (dtype != p.dtype) invalid(kWhere, std::string(what) + ": every operand must have one dtype");
  if (address == 0) invalid(kWhere, std::string(what) + ": address is 0");
  if (address % dtype_size(dtype) != 0)
    invalid(kWhere, std::string(what) + ": address is not aligned to its element size");
}

void set_kind(Stream& stream, Problem& p, DType dtype) {
  if (!is_float(dtype)) invalid(kWhere, "operands must be float16, bfloat16, float32 or float64");
  p.dtype = dtype;
  p.kind = dtype == DType::Float64 ? ComputeKind::Float64 : ComputeKind::Float32;
  if (p.kind == ComputeKind::Float64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
}

Strides strides_of(const ConvTensor& t, int spatial) {
  Strides s;
  s.n = t.strides[0];
  s.c = t.strides[1];
  const int off = 3 - spatial;
  for (int d = 0; d < spatial; ++d) s.sp[off + d] = t.strides[2 + d];
  return s;
}

// The single stride of the collapsed spatial dims (position l = (d * H + h) * W + w), or -1
// when they do not collapse.
int64_t collapsed_stride(const Strides& s, const int64_t size[3]) {
  int64_t stride = -1, expect = -1;
  for (int d = 2; d >= 0; --d) {
    if (size[d] == 1) continue;
    if (stride < 0) {
      stride = s.sp[d];
    } else if (s.sp[d] != expect) {
      return -1;
    }
    expect = s.sp[d] * size[d];
  }
  return stride < 0 ? 1 : stride;
}

// Largest |element offset| of the first `nb` samples of an [N, C, *size] tensor.
int64_t span(const Strides& s, int64_t nb, int64_t c, const int64_t size[3]) {
  if (nb == 0 || c == 0 || size[0] * size[1] * size[2] == 0) return 0;
  int64_t r = (nb - 1) * std::abs(s.n) + (c - 1) * std::abs(s.c);
  for (int d = 0; d < 3; ++d) r += (size[d] - 1) * std::abs(s.sp[d]);
  return r;
}

uint64_t offset_address(uint64_t address, int64_t elements, DType dtype) {
  return address + static_cast<uint64_t>(elements * static_cast<int64_t>(dtype_size(dtype)));
}

DType acc_dtype(const Problem& p) { return p.kind == ComputeKind::Float64 ? DType::Float64 : DType::Float32; }

// The memory of the convolution call being recorded on this thread (hazard tracking): its
// inputs (read), its output and scratch buffers (read and written). Every conv.comp dispatch
// of the call declares all of it; the GEMMs and element-wise kernels it records declare their
// own operands. Outside a call (null) dispatches are ordered against everything.
thread_local AccessSet* t_call_accesses = nullptr;

class CallAccesses {
 public:
  CallAccesses() : previous_(t_call_accesses) { t_call_accesses = &set; }
  ~CallAccesses() { t_call_accesses = previous_; }
  CallAccesses(const CallAccesses&) = delete;
  CallAccesses& operator=(const CallAccesses&) = delete;
  // An [n, c, *size] tensor with strides `s`.
  void tensor(uint64_t address, DType dtype, const Strides& s, int64_t n, int64_t c,
              const int64_t size[3], bool write) {
    const int64_t sizes[5] = {n, c, size[0], size[1], size[2]};
    const int64_t strides[5] = {s.n, s.c, s.sp[0], s.sp[1], s.sp[2]};
    add_strided(set, address, dtype, 5, sizes, strides, write);
  }
  AccessSet set;

 private:
  AccessSet* previous_;
};

// A temporary device buffer, freed when the scope ends (after the commands using it were
// recorded: later reuse is ordered after them on the stream).
class Scratch {
 public:
  Scratch(Stream& stream, uint64_t bytes) : stream_(stream) {
    if (bytes > 0) address_ = stream.device().allocator().allocate(bytes, stream.id());
    if (address_ != 0 && t_call_accesses) t_call_accesses->read(address_, bytes).write(address_, bytes);
  }
  ~Scratch() {
    if (address_ != 0) stream_.device().allocator().free(address_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  uint64_t address() const { return address_; }

 private:
  Stream& stream_;
  uint64_t address_ = 0;
};

// Largest batch chunk (1..n) whose per-chunk element counts and offsets stay in range and
// whose column buffers fit the budget; throws when even one sample does not fit.
template <class Fits>
int64_t choose_chunk(const Problem& p, int64_t bytes_per_sample, Fits fits) {
  int64_t nb = p.n;
  if (bytes_per_sample > 0) nb = std::clamp<int64_t>(conv_tuning().column_budget / bytes_per_sample, 1, p.n);
  while (nb > 1 && !fits(nb)) nb = (nb + 1) / 2;
  if (!fits(nb)) invalid(kWhere, "one sample exceeds the kernel's 32-bit index range");
  return nb;
}

void record(Stream& stream, ConvOp op, const Problem& p, int64_t total, ConvPush push,
            const ConvGeometryBlock& block) {
  if (total <= 0) return;
  if (total > kMaxIndex) invalid(kWhere, "more invocations than the kernel's 32-bit index range");
  const char* op_name = op == ConvOp::Im2col   ? "im2col"
                        : op == ConvOp::Col2im ? "col2im"
                                               : "direct";
  const std::string name = std::string("conv.") + op_name +
                           (p.kind == ComputeKind::Float64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  push.total = static_cast<int32_t>(total);
  push.geometry = stream.upload_params(&block, sizeof(block));
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(push.src_dtype), static_cast<uint32_t>(push.dst_dtype),
            static_cast<uint32_t>(push.aux_dtype), static_cast<uint32_t>(push.aux2_dtype)};
  else
    spec = {UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
  const uint32_t wg = tuning().elementwise_workgroup;
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, spec);
  stream.dispatch(pipeline, group_count(stream, total, wg), 1, 1, &push, sizeof(push), nullptr, 0,
                  t_call_accesses);
}

// The geometry rows shared by every op: X's sizes and channels C, output sizes and COUT.
ConvGeometryBlock geometry(const Problem& p, int64_t c, const int64_t in[3], const int64_t out[3],
                           const int64_t k[3], const int64_t st[3], const int64_t pd[3],
                           const int64_t dl[3]) {
  ConvGeometryBlock g{};
  int64_t kvol = 1;
  for (int d = 0; d < 3; ++d) {
    g.in_size[d] = static_cast<int32_t>(in[d]);
    g.out_size[d] = static_cast<int32_t>(out[d]);
    g.ksize[d] = static_cast<int32_t>(k[d]);
    g.stride[d] = static_cast<int32_t>(st[d]);
    g.pad[d] = static_cast<int32_t>(pd[d]);
    g.dil[d] = static_cast<int32_t>(dl[d]);
    kvol *= k[d];
  }
  g.in_size[3] = static_cast<int32_t>(c);
  g.out_size[3] = static_cast<int32_t>(p.cout);
  g.ksize[3] = static_cast<int32_t>(kvol);
  return g;
}

void set_x_strides(ConvGeometryBlock& g, const Strides& s) {
  for (int d = 0; d < 3; ++d) g.x_stride[d] = static_cast<int32_t>(s.sp[d]);
  g.x_stride[3] = static_cast<int32_t>(s.c);
  g.x_stride_n[0] = static_cast<int32_t>(s.n);
}

// The geometry of the direct and implicit-GEMM kernels: X (or dX) strides in x_stride, Y (or
// dY) strides in col_stride (n, channel, collapsed position), CG / COUT_G in stride[3] /
// pad[3].
ConvGeometryBlock xy_geometry(const Problem& p, const Strides& xs, const Strides& ys, int64_t y_l) {
  ConvGeometryBlock g = geometry(p, p.c, p.in, p.out, p.k, p.st, p.pd, p.dl);
  set_x_strides(g, xs);
  g.stride[3] = static_cast<int32_t>(p.cg);
  g.pad[3] = static_cast<int32_t>(p.coutg);
  g.col_stride[0] = static_cast<int32_t>(ys.n);
  g.col_stride[1] = static_cast<int32_t>(ys.c);
  g.col_stride[2] = static_cast<int32_t>(y_l);
  return g;
}

// im2col of samples [n0, n0 + nb) of `x` (channels c, spatial `in`) into col: element
// (n, r, l) at n * col_n + r * col_r + l.
void im2col(Stream& stream, const Problem& p, uint64_t x, DType x_dtype, const Strides& xs,
            int64_t c, const int64_t in[3], const int64_t out[3], const int64_t k[3],
            const int64_t st[3], const int64_t pd[3], const int64_t dl[3], int64_t n0, int64_t nb,
            uint64_t col, DType col_dtype, int64_t col_n, int64_t col_r) {
  ConvGeometryBlock g = geometry(p, c, in, out, k, st, pd, dl);
  set_x_strides(g, xs);
  g.col_stride[0] = static_cast<int32_t>(col_n);
  g.col_stride[1] = static_cast<int32_t>(col_r);
  ConvPush push{};
  push.src = offset_address(x, n0 * xs.n, x_dtype);
  push.dst = col;
  push.src_dtype = static_cast<int32_t>(x_dtype);
  push.dst_dtype = static_cast<int32_t>(col_dtype);
  const int64_t kvol = k[0] * k[1] * k[2];
  const int64_t l = out[0] * out[1] * out[2];
  record(stream, ConvOp::Im2col, p, nb * c * kvol * l, push, g);
}

// ---------------------------------------------------------------- grouped GEMM

// A GEMM operand with strides for the two batch levels (sample n, group g).
struct Operand2 {
  GemmMatrix m;  // batch_stride unused
  int64_t n_stride = 0, g_stride = 0;
};

// C[n][g] = A[n][g] @ B[n][g] (+ beta * bias[n][g]) for n < nb, g < gb.
void grouped_gemm(Stream& stream, ComputeKind kind, int64_t m, int64_t n, int64_t k, int64_t nb,
                  int64_t gb, Operand2 a, Operand2 b, Operand2 c, Operand2 bias, double beta) {
  if (nb == 0 || gb == 0) return;
  std::vector<Operand2*> ops = {&a, &b, &c};
  if (bias.m.address != 0) ops.push_back(&bias);
  Gemm base;
  base.kind = kind;
  base.m = m;
  base.n = n;
  base.k = k;
  base.alpha = GemmScalar{1.0, 1};
  base.beta = GemmScalar{beta, static_cast<int64_t>(beta)};
  auto run = [&](int64_t batch, bool over_n, int64_t fixed_index) {
    Gemm q = base;
    q.batch = batch;
    GemmMatrix* dst[4] = {&q.a, &q.b, &q.c, &q.bias};
    for (size_t i = 0; i < ops.size(); ++i) {
      GemmMatrix mm = ops[i]->m;
      const int64_t fixed_stride = over_n ? ops[i]->g_stride : ops[i]->n_stride;
      mm.address = offset_address(mm.address, fixed_index * fixed_stride, mm.dtype);
      mm.batch_stride = over_n ? ops[i]->n_stride : ops[i]->g_stride;
      *dst[i] = mm;
    }
    gemm(stream, q);
  };
  if (gb == 1) return run(nb, true, 0);
  if (nb == 1) return run(gb, false, 0);
  bool uniform = true;
  for (Operand2* o : ops) uniform &= o->n_stride == gb * o->g_stride;
  if (uniform) return run(nb * gb, false, 0);
  if (gb <= nb) {
    for (int64_t g = 0; g < gb; ++g) run(nb, true, g);
  } else {
    for (int64_t i = 0; i < nb; ++i) run(gb, false, i);
  }
}

// ---------------------------------------------------------------- forward

void forward_direct(Stream& stream, const Problem& p, const ConvTensor& y, const Strides& ys,
                    int64_t y_l, const ConvTensor& x, const Strides& xs, Operand w, Operand bias) {
  auto fits = [&](int64_t nb) {
    return span(xs, nb, p.c, p.in) <= kMaxIndex && span(ys, nb, p.cout, p.out) <= kMaxIndex &&
           nb * p.cout * p.l <= kMaxIndex;
  };
  const int64_t chunk = choose_chunk(p, 0, fits);
  const ConvGeometryBlock g = xy_geometry(p, xs, ys, y_l);
  detail::set_last_conv_algorithm("direct");
  for (int64_t n0 = 0; n0 < p.n; n0 += chunk) {
    const int64_t nb = std::min(chunk, p.n - n0);
    ConvPush push{};
    push.src = offset_address(x.address, n0 * xs.n, x.dtype);
    push.dst = offset_address(y.address, n0 * ys.n, y.dtype);
    push.aux = w.address;
    push.aux2 = bias.address;
    push.src_dtype = static_cast<int32_t>(x.dtype);
    push.dst_dtype = static_cast<int32_t>(y.dtype);
    push.aux_dtype = static_cast<int32_t>(w.dtype);
    push.aux2_dtype = bias.address ? static_cast<int32_t>(bias.dtype) : 0;
    record(stream, ConvOp::Direct, p, nb * p.cout * p.l, push, g);
  }
}

// The implicit GEMM (shaders/conv.comp OP 3; float32 kind): per group a tiled GEMM whose B
// tile is gathered while it is loaded, one dispatch per batch chunk.
//   forward (mode 0):         Y = W @ im2col(X) + bias      M = COUT_G, N = Nc * L, R = CG * K
//   input gradient (mode 1):  dX = W^T @ dYcol + bias       M = CG, N = Nc * I, R = COUT_G * K
//   weight gradient (mode 2): dW = dY @ im2col(X)^T         M = COUT_G, N = CG * K, R = N * L
//                             (one chunk: the whole batch; with `splits` > 1 the batch is
//                             cut into that many runs of samples, each summed into its own
//                             float32 partial dW by its own workgroups, z over (split, group))
// `g` is xy_geometry's (X / dX strides in x_stride, Y / dY strides in col_stride);
// `src` (X or dY) and `dst` (Y or dX) advance by src_n / dst_n elements per sample.
class ImplicitGemm {
 public:
  ImplicitGemm(Stream& stream, const Problem& p, int mode, int64_t splits = 1)
      : stream_(stream), p_(p), mode_(mode), splits_(splits) {
    const ConvTuning::ImplicitTile& t = conv_tuning().implicit_tile;
    tile_ = t;
    bm_ = int64_t{t.tm} * t.wm;
    bn_ = int64_t{t.tn} * t.wn;
    m_ = mode == 1 ? p.cg : p.coutg;
    r_ = mode == 0 ? p.cg * p.kvol : mode == 1 ? p.coutg * p.kvol : 0;  // mode 2: per chunk
    per_sample_ = mode == 0 ? p.l : mode == 1 ? p.ivol : 0;  // columns per sample
    // 16-bit operands on cooperative matrices where the device has them (all of one dtype:
    // check_operand; the weight gradient's float32 partials are written by store_c).
    coopmat_ = detail::conv_coopmat_plan(stream, p.dtype, m_, columns(p.n), reduction(p.n), &plan_);
    if (coopmat_) bm_ = plan_.bm, bn_ = plan_.bn;
    row_tiles_ = (m_ + bm_ - 1) / bm_;
    gy_ = groups(row_tiles_, 1);
    gz_ = groups(p.groups * splits, 2);
  }
  // Workgroup tiles of the whole problem (mode 2: of one split).
  int64_t tiles(int64_t nb) const {
    return (columns(nb) + bn_ - 1) / bn_ * row_tiles_ * p_.groups;
  }
  // Whether the loops of an nb-sample chunk stay within the device's loop budget.
  bool within_budget(int64_t nb) const { return loop_cost(nb) <= loop_budget(stream_); }
  int64_t columns(int64_t nb) const { return mode_ == 2 ? p_.cg * p_.kvol : nb * per_sample_; }
  int64_t reduction(int64_t nb) const { return mode_ == 2 ? nb * p_.l : r_; }
  // `per_split` (mode 2 with splits): samples per split, the partials at dst, one per split.
  void record(const ConvGeometryBlock& g, uint64_t src, DType src_dt, int64_t src_n, uint64_t dst,
              DType dst_dt, int64_t dst_n, Operand w, Operand bias, int64_t chunk,
              int64_t per_split = 0) {
    const int64_t reduced = mode_ != 2 ? 1 : per_split > 0 ? per_split : p_.n;
    if (!within_budget(reduced))
      invalid(kWhere, "the reduction of " + std::to_string(reduction(reduced)) +
                          " elements exceeds the device's loop-iteration limit (max_loop_iterations)");
    const ShaderBinary* shader = coopmat_ ? plan_.shader : find_shader("conv.implicit.float32");
    if (!shader) invalid(kWhere, "no shader variant 'conv.implicit.float32' (stale build?)");
    const uint32_t bias_dt = static_cast<uint32_t>(bias.address ? bias.dtype : src_dt);
    std::vector<uint32_t> spec;
    if (tuning().specialize_dtypes)
      spec = {static_cast<uint32_t>(src_dt), static_cast<uint32_t>(dst_dt),
              static_cast<uint32_t>(w.dtype), bias_dt};
    else
      spec = {UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
    uint32_t workgroup = tile_.wm * tile_.wn;
    if (coopmat_) {
      spec.insert(spec.end(), {plan_.bm, plan_.bn, plan_.bk, plan_.warps_m, plan_.warps_n,
                               static_cast<uint32_t>(mode_), plan_.sg});
      workgroup = plan_.workgroup();
    } else {
      spec.insert(spec.end(), {tile_.tm, tile_.tn, tile_.wm, tile_.wn, tile_.bk,
                               static_cast<uint32_t>(mode_)});
    }
    VkPipeline pipeline = stream_.device().pipelines().get(*shader, workgroup, spec);
    detail::set_last_conv_algorithm(!coopmat_ ? "implicit"
                                    : plan_.emulated ? "coopmat_emulated"
                                                     : "coopmat");
    for (int64_t n0 = 0; n0 < p_.n; n0 += chunk) {
      const int64_t nb = std::min(chunk, p_.n - n0);
      ConvPush push{};
      push.src = offset_address(src, n0 * src_n, src_dt);
      push.dst = offset_address(dst, n0 * dst_n, dst_dt);
      push.aux = w.address;
      push.aux2 = bias.address;
      push.total = static_cast<int32_t>(nb);
      push.src_dtype = static_cast<int32_t>(src_dt);
      push.dst_dtype = static_cast<int32_t>(dst_dt);
      push.aux_dtype = static_cast<int32_t>(w.dtype);
      push.aux2_dtype = static_cast<int32_t>(bias_dt);
      push.pad0 = static_cast<int32_t>(per_split);
      push.geometry = stream_.upload_params(&g, sizeof(g));
      const int64_t col_tiles = (columns(nb) + bn_ - 1) / bn_;
      stream_.dispatch(pipeline, groups(col_tiles, 0), gy_, gz_, &push, sizeof(push), nullptr, 0,
                       t_call_accesses);
    }
  }

 private:
  uint32_t groups(int64_t items, int dim) const {
    const DeviceCapabilities& caps = stream_.device().caps();
    int64_t cap = std::min<int64_t>(tuning().max_workgroups, caps.max_workgroup_count[dim]);
    return static_cast<uint32_t>(std::clamp<int64_t>(items, 1, std::max<int64_t>(cap, 1)));
  }
  // Loop iterations of an invocation (loop_budget): per tile it owns, the reduction steps
  // (their unrolled fetch / store / product loops counted once each) and the tile loops.
  int64_t loop_cost(int64_t nb) const {
    const int64_t col_tiles = (columns(nb) + bn_ - 1) / bn_;
    const int64_t gx = groups(col_tiles, 0);
    const int64_t tiles = (col_tiles + gx - 1) / gx * ((row_tiles_ + gy_ - 1) / gy_) *
                          ((p_.groups * splits_ + gz_ - 1) / gz_);
    if (coopmat_) return detail::conv_coopmat_loop_cost(plan_, tiles, reduction(nb));
    return tiles * (3 + (reduction(nb) + tile_.bk - 1) / tile_.bk * 4);
  }

  Stream& stream_;
  const Problem& p_;
  int mode_;
  int64_t splits_ = 1;
  ConvTuning::ImplicitTile tile_;
  bool coopmat_ = false;
  detail::ConvCoopmatPlan plan_;
  int64_t bm_ = 0, bn_ = 0, m_ = 0, r_ = 0, per_sample_ = 0, row_tiles_ = 0;
  uint32_t gy_ = 1, gz_ = 1;
};

// Batch splits of the implicit weight gradient with `tiles` workgroup tiles: where the output
// (COUT_G x CG*K per group) is a few tiles and the reduction (N * L) long (the first stage of
// a ResNet: 64 x 576 outputs, 9 tiles of 64 x 64, a reduction of 32 x 56 x 56), the batch is
// split so that about 256 workgroups run, each split keeping at least 4096 reduction steps.
// ConvTuning::weight_splits forces a count.
int64_t weight_gradient_splits(const Problem& p, int64_t tiles) {
  const int64_t forced = conv_tuning().weight_splits;
  if (forced > 0) return std::min(forced, p.n);
  if (tiles >= 128 || p.n < 2) return 1;
  const int64_t wanted = (256 + tiles - 1) / tiles;
  return std::clamp<int64_t>(std::min({wanted, p.n, p.n * p.l / 4096}), 1, 64);
}

// dW = the sum of `splits` float32 partials (contiguous, `numel` each): one GEMM,
// dW[numel x 1] = P^T[numel x splits] @ ones[splits x 1], rounded once to dW's dtype.
void sum_partials(Stream& stream, uint64_t partials, int64_t splits, int64_t numel, Operand dw) {
  const float one = 1.0f;
  Gemm sum;
  sum.kind = ComputeKind::Float32;
  sum.m = numel, sum.n = 1, sum.k = splits;
  sum.a = GemmMatrix{partials, DType::Float32, 1, numel, 0};
  sum.b = GemmMatrix{stream.upload_params(&one, sizeof one), DType::Float32, 0, 0, 0};
  sum.c = GemmMatrix{dw.address, dw.dtype, 1, 0, 0};
  gemm(stream, sum);
}

// Whether the implicit GEMM runs (forced, or by default on GPUs: not on CPU devices, whose
// GEMM is tuned for SIMD lanes) for a float32-kind problem that is not a plain 1x1 GEMM.
bool use_implicit(Stream& stream, const Problem& p, bool plain_gemm) {
  const ConvTuning& t = conv_tuning();
  if (p.kind != ComputeKind::Float32) return false;
  if (t.algo == ConvTuning::Algo::Implicit || detail::conv_coopmat_checking()) return true;
  return t.algo == ConvTuning::Algo::Auto && !plain_gemm &&
         stream.device().caps().device_type != "cpu";
}

void forward_implicit(Stream& stream, const Problem& p, const ConvTensor& y, const Strides& ys,
                      int64_t y_l, const ConvTensor& x, const Strides& xs, Operand w, Operand bias) {
  ImplicitGemm op(stream, p, 0);
  auto fits = [&](int64_t nb) {
    return span(xs, nb, p.c, p.in) <= kMaxIndex && span(ys, nb, p.cout, p.out) <= kMaxIndex &&
           nb * p.l <= kMaxIndex && op.within_budget(nb);
  };
  const int64_t chunk = choose_chunk(p, 0, fits);
  const ConvGeometryBlock g = xy_geometry(p, xs, ys, y_l);
  op.record(g, x.address, x.dtype, xs.n, y.address, y.dtype, ys.n, w, bias, chunk);
}

bool is_pointwise(const Problem& p) {
  for (int d = 0; d < 3; ++d)
    if (p.k[d] != 1 || p.st[d] != 1 || p.pd[d] != 0 || p.in[d] != p.out[d]) return false;
  return true;
}

}  // namespace

ConvTuning& conv_tuning() {
  static ConvTuning t = [] {
    ConvTuning d;
    const char* v = std::getenv("TORCH_VK_CONV_ALGO");
    if (v && std::string(v) == "im2col") d.algo = ConvTuning::Algo::Im2col;
    if (v && std::string(v) == "direct") d.algo = ConvTuning::Algo::Direct;
    if (v && std::string(v) == "implicit") d.algo = ConvTuning::Algo::Implicit;
    // "tm,tn,wm,wn,bk": the implicit GEMM's tile (tests and tuning); ignored unless all five
    // are positive, wm * wn <= 1024 and the shared tiles fit 48 KiB.
    if (const char* tile = std::getenv("TORCH_VK_CONV_IMPLICIT_TILE")) {
      unsigned v5[5] = {};
      if (std::sscanf(tile, "%u,%u,%u,%u,%u", &v5[0], &v5[1], &v5[2], &v5[3], &v5[4]) == 5 &&
          *std::min_element(v5, v5 + 5) > 0 && v5[2] * v5[3] <= 1024 &&
          (uint64_t{v5[0]} * v5[2] + uint64_t{v5[1]} * v5[3]) * v5[4] * 4 <= (48u << 10))
        d.implicit_tile = {v5[0], v5[1], v5[2], v5[3], v5[4]};
    }
    const char* b = std::getenv("TORCH_VK_CONV_COLUMN_BYTES");
    if (b && *b) d.column_budget = std::max<int64_t>(1, std::atoll(b));
    const char* splits = std::getenv("TORCH_VK_CONV_WEIGHT_SPLITS");
    if (splits && *splits) d.weight_splits = std::max<int64_t>(0, std::atoll(splits));
    // TORCH_VK_CONV_COOPMAT, _TILE and _SELF_CHECK are read where they apply
    // (conv_coopmat.cpp), so tests can set them per process before the first convolution.
    return d;
  }();
  return t;
}

void conv_forward(Stream& stream, const ConvShape& shape, const ConvTensor& y, const ConvTensor& x,
                  Operand w, Operand bias) {
  Problem p = normalize(stream, shape);
  set_kind(stream, p, x.dtype);
  if (p.n == 0 || p.cout == 0 || p.l == 0) return;
  check_operand(p, y.address, y.dtype, "output");
  const Strides ys = strides_of(y, shape.spatial);
  const int64_t y_l = collapsed_stride(ys, p.out);
  if (y_l < 0) invalid(kWhere, "the output's spatial dims must collapse to one stride");
  if (bias.address != 0) check_operand(p, bias.address, bias.dtype, "bias");
  const bool reduces = p.cg > 0 && p.ivol > 0;  // else Y = bias (or 0)
  if (reduces) {
    check_operand(p, x.address, x.dtype, "input");
    check_operand(p, w.address, w.dtype, "weight");
  }
  const Strides xs = strides_of(x, shape.spatial);
  CallAccesses call;
  if (reduces) {
    call.tensor(x.address, x.dtype, xs, p.n, p.c, p.in, false);
    add_dense(call.set, w.address, w.dtype, p.cout * p.cg * p.kvol, false);
  }
  add_dense(call.set, bias.address, bias.dtype, p.cout, false);
  call.tensor(y.address, y.dtype, ys, p.n, p.cout, p.out, true);
  const ConvTuning& t = conv_tuning();
  bool direct = t.algo == ConvTuning::Algo::Direct || !reduces;
  if (t.algo == ConvTuning::Algo::Auto)
    direct |= p.cg * p.kvol <= t.direct_max_reduction && (p.groups > 1 || p.coutg <= 4);
  if (direct) {
    ConvTensor xx = x;
    if (!reduces) xx.address = y.address, xx.dtype = y.dtype;  // never read
    Operand ww = reduces ? w : Operand{y.address, y.dtype};
    return forward_direct(stream, p, y, ys, y_l, xx, xs, ww, bias);
  }

  const int64_t x_l = collapsed_stride(xs, p.in);
  const bool plain_gemm = t.gemm_1x1 && is_pointwise(p) && x_l >= 0;
  if (use_implicit(stream, p, plain_gemm))
    return forward_implicit(stream, p, y, ys, y_l, x, xs, w, bias);

  const int64_t ck = p.c * p.kvol, cgk = p.cg * p.kvol;
  Operand2 a{GemmMatrix{w.address, w.dtype, cgk, 1, 0}, 0, p.coutg * cgk};
  Operand2 bias2;
  if (bias.address != 0) bias2 = Operand2{GemmMatrix{bias.address, bias.dtype, 1, 0, 0}, 0, p.coutg};
  const double beta = bias.address != 0 ? 1.0 : 0.0;
  if (plain_gemm) {
    // Y[n]_g = W_g @ X[n]_g with X[n] read in place as a C x L matrix.
    Operand2 b{GemmMatrix{x.address, x.dtype, xs.c, x_l, 0}, xs.n, p.cg * xs.c};
    Operand2 c{GemmMatrix{y.address, y.dtype, ys.c, y_l, 0}, ys.n, p.coutg * ys.c};
    detail::set_last_conv_algorithm("gemm");
    return grouped_gemm(stream, p.kind, p.coutg, p.l, cgk, p.n, p.groups, a, b, c, bias2, beta);
  }
  const int64_t per_sample = ck * p.l;
  auto fits = [&](int64_t nb) {
    return nb * per_sample <= kMaxIndex && span(xs, nb, p.c, p.in) <= kMaxIndex;
  };
  const int64_t chunk = choose_chunk(p, per_sample * dtype_size(x.dtype), fits);
  Scratch col(stream, static_cast<uint64_t>(chunk * per_sample) * dtype_size(x.dtype));
  detail::set_last_conv_algorithm("im2col");
  for (int64_t n0 = 0; n0 < p.n; n0 += chunk) {
    const int64_t nb = std::min(chunk, p.n - n0);
    im2col(stream, p, x.address, x.dtype, xs, p.c, p.in, p.out, p.k, p.st, p.pd, p.dl, n0, nb,
           col.address(), x.dtype, per_sample, p.l);
    Operand2 b{GemmMatrix{col.address(), x.dtype, p.l, 1, 0}, per_sample, cgk * p.l};
    Operand2 c{GemmMatrix{offset_address(y.address, n0 * ys.n, y.dtype), y.dtype, ys.c, y_l, 0},
               ys.n, p.coutg * ys.c};
    grouped_gemm(stream, p.kind, p.coutg, p.l, cgk, nb, p.groups, a, b, c, bias2, beta);
  }
}

// ---------------------------------------------------------------- backward input

void conv_backward_input(Stream& stream, const ConvShape& shape, const ConvTensor& dx,
                         const ConvTensor& dy, Operand w, Operand bias) {
  Problem p = normalize(stream, shape);
  set_kind(stream, p, dx.dtype);
  if (p.n == 0 || p.c == 0 || p.ivol == 0) return;
  check_operand(p, dx.address, dx.dtype, "grad_input");
  if (bias.address != 0) check_operand(p, bias.address, bias.dtype, "bias");
  const Strides xs = strides_of(dx, shape.spatial);
  const Strides ys = strides_of(dy, shape.spatial);
  const bool contributes = p.coutg > 0 && p.l > 0;
  const int64_t cgk = p.cg * p.kvol, ck = p.c * p.kvol;
  int64_t y_l = 1;
  if (contributes) {
    check_operand(p, dy.address, dy.dtype, "grad_output");
    check_operand(p, w.address, w.dtype, "weight");
    y_l = collapsed_stride(ys, p.out);
    if (y_l < 0) invalid(kWhere, "grad_output's spatial dims must collapse to one stride");
  }
  CallAccesses call;
  if (contributes) {
    call.tensor(dy.address, dy.dtype, ys, p.n, p.cout, p.out, false);
    add_dense(call.set, w.address, w.dtype, p.cout * p.cg * p.kvol, false);
  }
  add_dense(call.set, bias.address, bias.dtype, p.c, false);
  call.tensor(dx.address, dx.dtype, xs, p.n, p.c, p.in, true);
  // W_g^T: (r, co) at co * CG*K + r.
  const Operand2 wt{GemmMatrix{w.address, w.dtype, 1, cgk, 0}, 0, p.coutg * cgk};
  const int64_t x_l = collapsed_stride(xs, p.in);
  const bool plain_gemm = conv_tuning().gemm_1x1 && is_pointwise(p) && x_l >= 0;
  if (contributes && use_implicit(stream, p, plain_gemm)) {
    // dX = W^T @ dYcol (+ bias) without the column buffer and the col2im pass.
    ImplicitGemm op(stream, p, 1);
    auto fits = [&](int64_t nb) {
      return span(xs, nb, p.c, p.in) <= kMaxIndex && span(ys, nb, p.cout, p.out) <= kMaxIndex &&
             nb * p.ivol <= kMaxIndex && op.within_budget(nb);
    };
    const int64_t chunk = choose_chunk(p, 0, fits);
    const ConvGeometryBlock g = xy_geometry(p, xs, ys, y_l);
    return op.record(g, dy.address, dy.dtype, ys.n, dx.address, dx.dtype, xs.n, w, bias, chunk);
  }
  if (contributes && plain_gemm) {
    Operand2 b{GemmMatrix{dy.address, dy.dtype, ys.c, y_l, 0}, ys.n, p.coutg * ys.c};
    Operand2 c{GemmMatrix{dx.address, dx.dtype, xs.c, x_l, 0}, xs.n, p.cg * xs.c};
    Operand2 bias2;
    if (bias.address != 0) bias2 = Operand2{GemmMatrix{bias.address, bias.dtype, 1, 0, 0}, 0, p.cg};
    detail::set_last_conv_algorithm("gemm");
    return grouped_gemm(stream, p.kind, p.cg, p.l, p.coutg, p.n, p.groups, wt, b, c, bias2,
                        bias.address != 0 ? 1.0 : 0.0);
  }
  const DType cdt = acc_dtype(p);
  const int64_t per_sample = contributes ? ck * p.l : 0;
  auto fits = [&](int64_t nb) {
    return nb * per_sample <= kMaxIndex && span(xs, nb, p.c, p.in) <= kMaxIndex &&
           nb * p.c * p.ivol <= kMaxIndex;
  };
  const int64_t chunk = choose_chunk(p, per_sample * dtype_size(cdt), fits);
  Scratch col(stream, static_cast<uint64_t>(chunk * per_sample) * dtype_size(cdt));
  detail::set_last_conv_algorithm("im2col");
  ConvGeometryBlock g = geometry(p, p.c, p.in, p.out, p.k, p.st, p.pd, p.dl);
  set_x_strides(g, xs);
  g.col_stride[0] = static_cast<int32_t>(per_sample);
  g.col_stride[1] = static_cast<int32_t>(p.l);
  for (int64_t n0 = 0; n0 < p.n; n0 += chunk) {
    const int64_t nb = std::min(chunk, p.n - n0);
    if (contributes) {
      Operand2 b{GemmMatrix{offset_address(dy.address, n0 * ys.n, dy.dtype), dy.dtype, ys.c, y_l, 0},
                 ys.n, p.coutg * ys.c};
      Operand2 c{GemmMatrix{col.address(), cdt, p.l, 1, 0}, per_sample, cgk * p.l};
      grouped_gemm(stream, p.kind, cgk, p.l, p.coutg, nb, p.groups, wt, b, c, Operand2{}, 0.0);
    }
    ConvPush push{};
    // Without contributions the columns are never read: any valid address will do.
    push.src = contributes ? col.address() : dx.address;
    push.dst = offset_address(dx.address, n0 * xs.n, dx.dtype);
    push.aux = bias.address;
    push.src_dtype = static_cast<int32_t>(contributes ? cdt : dx.dtype);
    push.dst_dtype = static_cast<int32_t>(dx.dtype);
    push.aux_dtype = bias.address ? static_cast<int32_t>(bias.dtype) : 0;
    record(stream, ConvOp::Col2im, p, nb * p.c * p.ivol, push, g);
  }
}

// ---------------------------------------------------------------- backward weight

void conv_backward_weight(Stream& stream, const ConvShape& shape, Operand dw, const ConvTensor& x,
                          const ConvTensor& dy) {
  Problem p = normalize(stream, shape);
  set_kind(stream, p, dw.dtype);
  const int64_t cgk = p.cg * p.kvol, ck = p.c * p.kvol;
  const int64_t numel = p.cout * cgk;
  if (numel == 0) return;
  check_operand(p, dw.address, dw.dtype, "grad_weight");
  if (numel > kMaxIndex) invalid(kWhere, "the weight exceeds the kernel's 32-bit index range");
  if (p.n == 0 || p.l == 0) {  // nothing contributes
    Geometry geo;
    geo.ndim = 1;
    geo.sizes[0] = numel;
    geo.strides[0][0] = 1;
    elementwise(stream, "fill", p.kind, numel, geo, &dw, 1, Scalars{});
    return;
  }
  check_operand(p, x.address, x.dtype, "input");
  check_operand(p, dy.address, dy.dtype, "grad_output");
  const Strides xs = strides_of(x, shape.spatial);
  const Strides ys = strides_of(dy, shape.spatial);
  const int64_t y_l = collapsed_stride(ys, p.out);
  if (y_l < 0) invalid(kWhere, "grad_output's spatial dims must collapse to one stride");
  CallAccesses call;
  call.tensor(x.address, x.dtype, xs, p.n, p.c, p.in, false);
  call.tensor(dy.address, dy.dtype, ys, p.n, p.cout, p.out, false);
  add_dense(call.set, dw.address, dw.dtype, numel, true);

  // The implicit GEMM when the whole batch is one chunk (dW written once from fp32 sums), or
  // split over the batch into float32 partials summed by a GEMM (few output tiles, a long
  // reduction: the early layers of CNNs).
  if (use_implicit(stream, p, false) && p.n * p.l <= kMaxIndex &&
      span(xs, p.n, p.c, p.in) <= kMaxIndex && span(ys, p.n, p.cout, p.out) <= kMaxIndex) {
    int64_t splits = weight_gradient_splits(p, ImplicitGemm(stream, p, 2).tiles(p.n));
    const int64_t per_split = (p.n + splits - 1) / splits;
    splits = (p.n + per_split - 1) / per_split;
    if (splits > 1 && splits * numel > kMaxIndex) splits = 1;
    const ConvGeometryBlock g = xy_geometry(p, xs, ys, y_l);
    const Operand dy_op{dy.address, dy.dtype};
    if (splits > 1) {
      ImplicitGemm op(stream, p, 2, splits);
      if (op.within_budget(per_split)) {
        Scratch partials(stream, static_cast<uint64_t>(splits * numel) * 4);
        op.record(g, x.address, x.dtype, 0, partials.address(), DType::Float32, 0, dy_op,
                  Operand{}, p.n, per_split);
        sum_partials(stream, partials.address(), splits, numel, dw);
        return;
      }
    }
    ImplicitGemm op(stream, p, 2);
    if (op.within_budget(p.n))
      return op.record(g, x.address, x.dtype, 0, dw.address, dw.dtype, 0, dy_op, Operand{}, p.n);
  }
  // Per sample: C*K*L column elements, plus COUT*L of dY^T when the chunk holds several.
  const int64_t col_per_sample = ck * p.l, dyt_per_sample = p.cout * p.l;
  const int64_t bytes_per_sample = (col_per_sample + dyt_per_sample) * dtype_size(x.dtype);
  auto fits = [&](int64_t nb) {
    return nb * col_per_sample <= kMaxIndex && nb * dyt_per_sample <= kMaxIndex &&
           span(xs, nb, p.c, p.in) <= kMaxIndex && span(ys, nb, p.cout, p.out) <= kMaxIndex;
  };
  const int64_t chunk = choose_chunk(p, bytes_per_sample, fits);
  const int64_t chunks = (p.n + chunk - 1) / chunk;
  detail::set_last_conv_algorithm("im2col");
  // 16-bit weights summed over several chunks: accumulate in float32, round once at the end.
  const bool via_acc = chunks > 1 && dtype_size(dw.dtype) < 4;
  const DType acc_dt = via_acc ? DType::Float32 : dw.dtype;
  Scratch acc(stream, via_acc ? static_cast<uint64_t>(numel) * 4 : 0);
  const uint64_t acc_address = via_acc ? acc.address() : dw.address;
  Scratch col(stream, static_cast<uint64_t>(chunk * col_per_sample) * dtype_size(x.dtype));
  Scratch dyt(stream, chunk > 1 ? static_cast<uint64_t>(chunk * dyt_per_sample) * dtype_size(dy.dtype) : 0);
  const int64_t one[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
  for (int64_t n0 = 0; n0 < p.n; n0 += chunk) {
    const int64_t nb = std::min(chunk, p.n - n0);
    const int64_t cols = nb * p.l;  // the GEMM's K: (n, l) pairs of the chunk
    // col [C*K][nb * L]: (r, (n, l)) at r * cols + n * L + l.
    im2col(stream, p, x.address, x.dtype, xs, p.c, p.in, p.out, p.k, p.st, p.pd, p.dl, n0, nb,
           col.address(), x.dtype, p.l, cols);
    Operand2 a;
    if (nb == 1) {
      a = Operand2{GemmMatrix{offset_address(dy.address, n0 * ys.n, dy.dtype), dy.dtype, ys.c, y_l, 0},
                   0, p.coutg * ys.c};
    } else {
      // dY^T [COUT][nb * L]: an im2col of dY with a 1x1 kernel.
      im2col(stream, p, dy.address, dy.dtype, ys, p.cout, p.out, p.out, one, one, zero, one, n0,
             nb, dyt.address(), dy.dtype, p.l, cols);
      a = Operand2{GemmMatrix{dyt.address(), dy.dtype, cols, 1, 0}, 0, p.coutg * cols};
    }
    Operand2 b{GemmMatrix{col.address(), x.dtype, 1, cols, 0}, 0, cgk * cols};
    Operand2 c{GemmMatrix{acc_address, acc_dt, cgk, 1, 0}, 0, p.coutg * cgk};
    const bool first = n0 == 0;
    grouped_gemm(stream, p.kind, p.coutg, cgk, cols, 1, p.groups, a, b, c, first ? Operand2{} : c,
                 first ? 0.0 : 1.0);
  }
  if (via_acc) {
    Geometry geo;
    geo.ndim = 1;
    geo.sizes[0] = numel;
    geo.strides[0][0] = 1;
    geo.strides[1][0] = 1;
    const Operand ops[2] = {dw, Operand{acc_address, DType::Float32}};
    elementwise(stream, "copy", ComputeKind::Float32, numel, geo, ops, 2, Scalars{});
  }
}

}  // namespace tvk::kernels
