// Launcher of the GEMM family (shaders/gemm.comp, variants gemm.<algo>.<kind>).
//
// Per call: validate, normalize (drop a bias that is not read, skip the product when k == 0
// or alpha == 0, transpose the whole problem when that makes C row-major or turns a 1 x n
// product into an n x 1 one), pick a tile configuration for the device class and shape, then
// either record one dispatch or split k (few outputs, long k): partial products of k chunks
// into a temporary of the accumulator dtype, then a combine pass that is itself a GEMM
// (partials @ ones, batched over columns).
//
// Configurations (algorithm, TM x TN register block, WM x WN invocations, BK):
//   GPU profiles, per vendor (DeviceCapabilities::vendor_id; GemmTuning::gpu_vendor forces
//   one), tiled ones double-buffered (STAGES 2: 2 x BK x (BM + BN) values of shared memory,
//   32 KiB for the large tiles, 16 KiB for the medium one; a device with less takes one
//   buffer, then shorter BK):
//   gpu-large    tiled  8x8,   16x16 invocations, BK 16 -> 128 x 128 workgroup tile
//                (AMD: 4 wave64 subgroups; Intel and others)
//   nvidia-large tiled  8x16,  16x8 invocations,  BK 16 -> 128 x 128 (NVIDIA: 4 warps of 32,
//                each invocation 8 x 16 outputs, as the fastest Vulkan SIMT GEMMs there)
//   gpu-medium   tiled  4x4,   16x16 invocations, BK 16 ->  64 x  64 (m, n >= 48; the large
//                tile of mobile GPUs, ARM / Qualcomm / Apple / Imagination, whose shared
//                memory and register files favour it)
//   gpu-small    direct 2x2,    8x8 invocations         ->  16 x  16 (small m or n)
//   cpu-large    tiled  16x16, 16x16 invocations, BK 4  -> 256 x 256 (lavapipe & other CPU
//   cpu-medium   tiled  16x16,  8x8 invocations, BK 4   -> 128 x 128  devices: invocations are
//                SIMD lanes and every load is a per-lane gather, so what counts is FMAs per
//                load: big register blocks. Measured on lavapipe (Mesa 22.3), 512^3 fp32:
//                4x4 direct 0.6, 8x8 tiled 1.9, 16x16 tiled 16x16 / BK 4 ~10 GFLOP/s. Their
//                pipelines take ~2 s to compile there, so smaller problems use cpu-mid
//                (~2 GFLOP/s, 0.25 s to compile) or cpu-small (0.05 s))
//   cpu-mid      direct 8x8,    8x8 invocations         ->  64 x  64
//   cpu-small    direct 4x4,    8x8 invocations         ->  32 x  32
//   cpu-lanes    lanes  32x16, 1 x subgroup (8 on lavapipe) -> 32 x 128 (CPU devices with
//                subgroup broadcast, float32 compute, problems of >= 2^24 multiply-adds: A is
//                loaded once per workgroup and broadcast, 64-bit group loads (2 float32
//                or 4 float16 / bfloat16 values).
//                lavapipe, Mesa 22.3, 512^3 fp32: ~5-6 GFLOP/s against ~2 for cpu-large. Its
//                pipelines take ~8 s to compile there (once per machine: Mesa's disk cache),
//                hence the size threshold)
//   cpu-texel    texel  8x4,    1x8 invocations         ->   8 x  32 (CPU devices with texel
//                buffers and subgroup shuffle, A and B both float32, float16 or bfloat16,
//                n > 1; 4 x 4 below 2^20 multiply-adds, for compile times: ~0.1 s on
//                lavapipe): the direct algorithm reading A and B through storage texel
//                buffers, a few vector instructions per load on lavapipe instead of a loop
//                over the lanes. The workgroup is one subgroup of 8 lanes that own the same 8
//                rows: lane l loads row l and the others read it with subgroupShuffle, and
//                consecutive workgroups take consecutive row tiles (B's panel stays in cache).
//                lavapipe, Mesa 22.3, 2-core Zen 3: 1024^3 fp32 ~20 GFLOP/s against ~15
//                for 16 x 8 with every lane loading every row (which also fell to ~10 at 2048).
//                Problems whose operands are not in allocator
//                segments (split-K's ones vector) or reach past a view use the
//                configurations above)
//   skinny       direct 1x1,   64x1 invocations         (n == 1: gemv, dot, split-K combine)
// GemmTuning::algo Tiled / Direct force the GPU profile's algorithm on any device, Lanes the
// cpu-lanes configuration wherever the device supports it (tests).
// A cooperative-matrix algorithm would be one more Config kind chosen in choose_config() from
// caps().cooperative_matrix, with its own shader variant.
#include "kernels/gemm.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/gemm_internal.h"
#include "kernels/generated.h"
#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

constexpr const char* kWhere = "tvk::kernels::gemm";
// Sizes stay this far below 2^31 so that tile-rounded indices never overflow int32.
constexpr int64_t kMaxDim = kMaxIndex - 65536;

struct Config {
  bool tiled = false;
  uint32_t tm = 1, tn = 1, wm = 64, wn = 1, bk = 16;
  bool lanes = false;  // the lanes algorithm (wm == 1, wn == the subgroup size)
  bool texel = false;  // the texel algorithm (operands through storage texel buffers)
  uint32_t stages = 1;  // tiled: shared buffers per operand (STAGES in the shader)
  uint32_t bm() const { return tm * wm; }
  uint32_t bn() const { return tn * wn; }
  uint32_t workgroup() const { return wm * wn; }
};

constexpr Config kGpuLarge{true, 8, 8, 16, 16, 16, false, false, 2};
constexpr Config kNvidiaLarge{true, 8, 16, 16, 8, 16, false, false, 2};
constexpr Config kGpuMedium{true, 4, 4, 16, 16, 16, false, false, 2};
constexpr Config kGpuSmall{false, 2, 2, 8, 8, 16};
constexpr Config kCpuLarge{true, 16, 16, 16, 16, 4};
constexpr Config kCpuMedium{true, 16, 16, 8, 8, 4};
constexpr Config kCpuMid{false, 8, 8, 8, 8, 16};
constexpr Config kCpuSmall{false, 4, 4, 8, 8, 16};
constexpr Config kSkinny{false, 1, 1, 64, 1, 16};
constexpr Config kCpuLanes{false, 32, 16, 1, 0, 16, true};  // wn: the device's subgroup size
constexpr Config kCpuTexel{false, 8, 4, 1, 8, 16, false, true};

const char* kind_name(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::Float32: return "float32";
    case ComputeKind::Int32: return "int32";
    case ComputeKind::Int64: return "int64";
    case ComputeKind::Float64: return "float64";
  }
  return "?";
}

uint32_t acc_size(ComputeKind kind) {
  return kind == ComputeKind::Float32 || kind == ComputeKind::Int32 ? 4 : 8;
}

DType acc_dtype(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::Float32: return DType::Float32;
    case ComputeKind::Int32: return DType::Int32;
    case ComputeKind::Int64: return DType::Int64;
    case ComputeKind::Float64: return DType::Float64;
  }
  return DType::Float32;
}

bool is_zero(ComputeKind kind, const GemmScalar& s) {
  switch (kind) {
    case ComputeKind::Float32: return static_cast<float>(s.f) == 0.0f;
    case ComputeKind::Float64: return s.f == 0.0;
    case ComputeKind::Int32: return static_cast<uint32_t>(s.i) == 0;
    case ComputeKind::Int64: return s.i == 0;
  }
  return false;
}

using detail::abs64;

// Validates one operand: address, alignment, 32-bit strides and in-matrix offsets.
void check_matrix(const GemmMatrix& x, int64_t rows, int64_t cols, const char* what) {
  check_dtype(kWhere, x.dtype, what);
  if (x.address == 0) invalid(kWhere, std::string(what) + ": address is 0");
  if (x.address % dtype_size(x.dtype) != 0)
    invalid(kWhere, std::string(what) + ": address is not aligned to its element size");
  for (int64_t s : {x.row_stride, x.col_stride})
    if (s > kMaxIndex || s < -kMaxIndex)
      invalid(kWhere, std::string(what) + ": stride beyond the 32-bit index range");
  int64_t reach = (rows - 1) * abs64(x.row_stride) + (cols - 1) * abs64(x.col_stride);
  if (reach > kMaxIndex)
    invalid(kWhere, std::string(what) +
                        ": element offsets inside one matrix exceed the 32-bit index range of "
                        "the kernel");
}

// Vector loads (float32 compute kind): float32, float16 and bfloat16 operands are read 4
// elements at a time along their contiguous axis (one 16-byte load of float32, one 8-byte
// load of 16-bit values), so every vector must be aligned to 4 elements. float16 takes the
// same paths as bfloat16: only the per-element conversion differs (shaders/common.glsl).
bool is_16bit_float(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16; }

bool vec4_aligned(const GemmMatrix& x, int64_t batch) {
  const uint64_t bytes = x.dtype == DType::Float32 ? 16 : is_16bit_float(x.dtype) ? 8 : 0;
  return bytes != 0 && x.address % bytes == 0 && (batch == 1 || x.batch_stride % 4 == 0);
}

// Elements per 64-bit group of the lanes algorithm (0: no group loads for this dtype).
int64_t group_elements(DType dt) { return dt == DType::Float32 ? 2 : is_16bit_float(dt) ? 4 : 0; }

// The lanes algorithm needs one full subgroup per workgroup and subgroup broadcast. It serves
// the float32 compute kind (float32 / float16 / bfloat16 operands) only: the other kinds are
// rare in models and each variant costs seconds of driver compile time.
bool lanes_supported(const DeviceCapabilities& caps, ComputeKind kind) {
  return kind == ComputeKind::Float32 && caps.subgroup_ballot && caps.subgroup_size >= 4 &&
         caps.subgroup_size <= 64 && caps.subgroup_size <= caps.max_workgroup_size[0];
}

// The texel algorithm reads A and B of one dtype (float32, or float16 / bfloat16 where the
// device has 16-bit texel formats) through storage texel buffers.
bool texel_supported(const DeviceCapabilities& caps, const Gemm& p) {
  // The shader declares subgroup shuffle (shuffled rows of A), so the device must have it.
  if (!caps.texel_buffers || !caps.subgroup_shuffle || p.kind != ComputeKind::Float32 ||
      p.k == 0 || p.a.dtype != p.b.dtype)
    return false;
  return p.a.dtype == DType::Float32 || (is_16bit_float(p.a.dtype) && caps.texel_16bit);
}

// The texel formats of an operand dtype: one element and four elements per texel.
TexelFormat texel_format(DType dt, bool four) {
  if (dt == DType::Float16) return four ? TexelFormat::RGBA16Float : TexelFormat::R16Float;
  if (dt == DType::BFloat16) return four ? TexelFormat::RGBA16Uint : TexelFormat::R16Uint;
  return four ? TexelFormat::RGBA32Float : TexelFormat::R32Float;
}

const char* texel_shader(DType dt) {
  return dt == DType::Float16 ? "gemm.texel.float16"
         : dt == DType::BFloat16 ? "gemm.texel.bfloat16"
                                 : "gemm.texel.float32";
}

// The GPU vendor whose profiles serve this device (GemmTuning::gpu_vendor, else its id).
GemmTuning::Vendor gpu_vendor(const DeviceCapabilities& caps) {
  using Vendor = GemmTuning::Vendor;
  const Vendor forced = gemm_tuning().gpu_vendor;
  if (forced != Vendor::Auto) return forced;
  switch (caps.vendor_id) {
    case 0x10DE: return Vendor::Nvidia;
    case 0x1002: return Vendor::Amd;
    case 0x8086: return Vendor::Intel;
    case 0x13B5:  // ARM
    case 0x5143:  // Qualcomm
    case 0x106B:  // Apple
    case 0x1010:  // Imagination
      return Vendor::Mobile;
    default: return Vendor::Generic;
  }
}

// The large tiled profile of `vendor` (m, n >= 1024).
Config large_profile(GemmTuning::Vendor vendor) {
  using Vendor = GemmTuning::Vendor;
  if (vendor == Vendor::Nvidia) return kNvidiaLarge;
  if (vendor == Vendor::Mobile) return kGpuMedium;
  return kGpuLarge;
}

// `allow_texel` false: the best configuration without the texel algorithm (its operands could
// not be bound, see bind_texel).
Config choose_config(Stream& stream, const Gemm& p, bool allow_texel = true) {
  const DeviceCapabilities& caps = stream.device().caps();
  const GemmTuning& t = gemm_tuning();
  Config c;
  // A forced GPU vendor runs the GPU profiles on any device (tests on CPU devices).
  const bool cpu = caps.device_type == "cpu" && t.gpu_vendor == GemmTuning::Vendor::Auto;
  const Config large = large_profile(gpu_vendor(caps));
  const bool lanes = lanes_supported(caps, p.kind);
  const bool texel = allow_texel && texel_supported(caps, p);
  const double flops = double(p.m) * double(p.n) * double(p.k) * double(p.batch);
  if (p.n == 1) {
    c = kSkinny;
  } else if (texel && (t.algo == GemmTuning::Algo::Texel ||
                       (cpu && t.algo == GemmTuning::Algo::Auto))) {
    c = kCpuTexel;
    if (flops < double(1 << 20)) c.tm = c.tn = 4;
    if (p.m < c.tm) c.tm = 4;
  } else if (t.algo == GemmTuning::Algo::Lanes && lanes) {
    c = kCpuLanes;
  } else if (t.algo == GemmTuning::Algo::Tiled) {
    c = (p.m >= 1024 && p.n >= 1024) ? large : kGpuMedium;
  } else if (t.algo == GemmTuning::Algo::Direct) {
    c = kGpuSmall;
  } else if (cpu) {
    if (lanes && p.m >= 64 && p.n >= 128 && p.k >= 32 && flops >= double(1 << 24))
      c = kCpuLanes;
    else if (p.m >= 512 && p.n >= 512 && p.k >= 64)
      c = kCpuLarge;
    else if (p.m >= 128 && p.n >= 128 && flops >= double(1 << 22))
      c = kCpuMedium;
    else if (p.m >= 32 && p.n >= 32 && flops >= double(1 << 20))
      c = kCpuMid;
    else
      c = kCpuSmall;
  } else if (p.m >= 1024 && p.n >= 1024) {
    c = large;
  } else if (p.m >= 48 && p.n >= 48) {
    c = kGpuMedium;
  } else {
    c = kGpuSmall;
  }
  if (t.algo == GemmTuning::Algo::Tiled) c.tiled = true, c.lanes = false, c.texel = false;
  if (t.algo == GemmTuning::Algo::Direct) c.tiled = false, c.lanes = false, c.texel = false;
  if (t.tm) c.tm = t.tm;
  if (t.tn) c.tn = t.tn;
  if (t.wm) c.wm = t.wm;
  if (t.wn) c.wn = t.wn;
  if (t.bk) c.bk = t.bk;
  if (t.stages) c.stages = t.stages;
  if (!c.tiled) c.stages = 1;
  if (c.lanes) {  // one subgroup per workgroup, whatever the tuning says
    c.wm = 1;
    c.wn = caps.subgroup_size;
  }
  if (c.tm == 0 || c.tn == 0 || c.wm == 0 || c.wn == 0 || c.bk == 0 || c.bk % 4 != 0 ||
      c.tm * c.tn > 1024 || c.stages < 1 || c.stages > 2)
    invalid(kWhere, "invalid tile configuration");
  // Device limits: one shared buffer, then shorter K steps, then a small direct configuration.
  auto shared_bytes = [&] {
    return c.tiled ? uint64_t(c.stages) * c.bk * (c.bm() + c.bn()) * acc_size(p.kind) : 0;
  };
  if (c.stages == 2 && shared_bytes() > caps.max_shared_memory_size) c.stages = 1;
  while (c.tiled && c.bk % 8 == 0 && shared_bytes() > caps.max_shared_memory_size) c.bk /= 2;
  uint64_t shared = shared_bytes();
  if (!c.lanes && (c.workgroup() > caps.max_workgroup_invocations ||
      c.workgroup() > caps.max_workgroup_size[0] || shared > caps.max_shared_memory_size))
    c = p.n == 1 ? Config{false, 1, 1, 32, 1, 16} : Config{false, 2, 2, 4, 8, 16};
  return c;
}

const char* algo_name(const Config& cfg) {
  return cfg.texel ? "texel" : cfg.lanes ? "lanes" : cfg.tiled ? "tiled" : "direct";
}

thread_local const char* g_last_algorithm = "";

// The texel algorithm's operands: the views of set 0 (see gemm.comp, texel section), the
// texel indices that replace the addresses of A and B in the push constants, and the load
// modes (A_LOAD / B_LOAD).
struct TexelOperands {
  VkBufferView views[6] = {};
  int32_t a = 0, b = 0, c = 0, bias = 0;
  uint32_t a_load = 0, b_load = 0;
};

// Binds every operand of `p` for the texel algorithm with configuration `cfg`. False when one
// cannot be: not inside an allocator segment (e.g. the split-K combine's ones vector), a
// negative stride, or an element past its view or the 32-bit index range.
bool bind_texel(Stream& stream, const Gemm& p, const Config& cfg, TexelOperands* out) {
  Allocator& allocator = stream.device().allocator();
  const uint32_t sid = stream.id();
  // The one-element view of x (its dtype's format) and its element index; `reach`: the
  // largest element offset read or written (batch, rows and columns together).
  auto scalar_view = [&](const GemmMatrix& x, int64_t rows, int64_t cols, TexelView* v) {
    if (x.row_stride < 0 || x.col_stride < 0 || x.batch_stride < 0) return false;
    const int64_t reach = (p.batch - 1) * x.batch_stride + (rows - 1) * x.row_stride +
                          (cols - 1) * x.col_stride;
    return allocator.texel_view(x.address, texel_format(x.dtype, false), sid, v) &&
           reach < v->count && v->first + reach < kMaxIndex;
  };
  // The four-element view over the same segment (its binding must hold a view of that format
  // even when unused) and whether x can be read in vectors of 4 elements: aligned to 4
  // elements, every vector inside the view.
  auto vector_view = [&](const GemmMatrix& x, const TexelView& one, int64_t rows, int64_t cols,
                         VkBufferView* view) {
    const TexelFormat format = texel_format(x.dtype, true);
    const uint64_t bytes = texel_bytes(format);
    TexelView v;
    if (!allocator.texel_view(x.address & ~(bytes - 1), format, sid, &v)) return false;
    *view = v.view;
    const int64_t reach = (p.batch - 1) * x.batch_stride + (rows - 1) * x.row_stride +
                          (cols - 1) * x.col_stride;
    return x.address % bytes == 0 && (one.first + reach) / 4 < v.first + v.count;
  };
  TexelView a, b;
  if (!scalar_view(p.a, p.m, p.k, &a) || !scalar_view(p.b, p.k, p.n, &b)) return false;
  const bool vec = gemm_tuning().vector_loads;
  VkBufferView a4 = VK_NULL_HANDLE, b4 = VK_NULL_HANDLE;
  const bool va = vector_view(p.a, a, p.m, p.k, &a4) && vec;
  const bool vb = vector_view(p.b, b, p.k, p.n, &b4) && vec;
  if (!a4 || !b4) return false;
  auto fours = [&](const GemmMatrix& x, int64_t other_stride) {
    return other_stride % 4 == 0 && (p.batch == 1 || x.batch_stride % 4 == 0);
  };
  out->a_load = 0;
  if (va && p.a.col_stride == 1 && p.k % 4 == 0 && fours(p.a, p.a.row_stride))
    out->a_load = 2;
  else if (va && p.a.row_stride == 1 && p.m % 4 == 0 && cfg.tm % 4 == 0 &&
           fours(p.a, p.a.col_stride))
    out->a_load = 3;
  // Rows shared through subgroupShuffle (gemm.comp, texel section) where the workgroup is one
  // subgroup whose lanes own the same rows: modes 2 / 0 become 4 / 5 (fewer loads than the
  // vector-along-m mode 3 as well). texel_supported() checked subgroup shuffle.
  if (gemm_tuning().shuffle_rows && cfg.wm == 1 &&
      cfg.wn == stream.device().caps().subgroup_size && cfg.tm % cfg.wn == 0)
    out->a_load = out->a_load == 2 ? 4 : 5;
  out->b_load = 0;
  if (vb && p.b.col_stride == 1 && p.n % 4 == 0 && cfg.tn % 4 == 0 &&
      fours(p.b, p.b.row_stride))
    out->b_load = 2;
  else if (vb && p.b.row_stride == 1 && p.k % 4 == 0 && fours(p.b, p.b.col_stride))
    out->b_load = 3;
  // C and the bias through their r32f views when float32; otherwise (and for an epilogue,
  // which has no C) the shader uses their addresses and the binding holds an r32f view of A's
  // segment (the binding's format).
  TexelView c, bias;
  if (!allocator.texel_view(p.a.address & ~uint64_t(3), TexelFormat::R32Float, sid, &c))
    return false;
  bias = c;
  const bool c_texel = p.c.address != 0 && p.c.dtype == DType::Float32;
  if (c_texel && !scalar_view(p.c, p.m, p.n, &c)) return false;
  const bool bias_texel = p.bias.address != 0 && p.bias.dtype == DType::Float32;
  if (bias_texel && !scalar_view(p.bias, p.m, p.n, &bias)) return false;
  out->views[0] = a4;
  out->views[1] = a.view;
  out->views[2] = b4;
  out->views[3] = b.view;
  out->views[4] = c.view;
  out->views[5] = bias.view;
  out->a = static_cast<int32_t>(a.first);
  out->b = static_cast<int32_t>(b.first);
  out->c = c_texel ? static_cast<int32_t>(c.first) : 0;
  out->bias = bias_texel ? static_cast<int32_t>(bias.first) : 0;
  return true;
}

// One dispatch of `p` (already validated and normalized) with configuration `cfg`; with an
// epilogue, `epilogue_shader` is the run-time built variant, `epilogue_args` the address
// of its argument block and `epilogue_accesses` what it touches (null: anything).
void record(Stream& stream, const Gemm& p, const Config& cfg,
            const ShaderBinary* epilogue_shader = nullptr, uint64_t epilogue_args = 0,
            const TexelOperands* texel = nullptr, const AccessSet* epilogue_accesses = nullptr) {
  const ShaderBinary* shader = epilogue_shader;
  if (!shader) {
    const std::string name = texel ? std::string(texel_shader(p.a.dtype))
                                   : std::string("gemm.") + algo_name(cfg) + "." + kind_name(p.kind);
    shader = find_shader(name);
    if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  }
  const bool has_bias = p.bias.address != 0;

  detail::GemmPush push = detail::gemm_push(p);
  if (epilogue_shader) {  // the padding words after the float32 alpha and beta
    push.alpha_bits |= (epilogue_args & 0xffffffffull) << 32;
    push.beta_bits |= epilogue_args & 0xffffffff00000000ull;
  }
  if (texel) {
    push.a = static_cast<uint32_t>(texel->a) | uint64_t(static_cast<uint32_t>(texel->b)) << 32;
    push.b = static_cast<uint32_t>(texel->c) | uint64_t(static_cast<uint32_t>(texel->bias)) << 32;
  }

  // Load modes. Tiled: how a workgroup loads its tiles (vec4 along the contiguous axis when
  // the float32 / float16 / bfloat16 operand is aligned for it, else scalar loads with
  // consecutive invocations along the smaller stride). Direct: vec4 register loads along the
  // contiguous axis, else scalar loads (0).
  uint32_t a_load = 0, b_load = 0;
  const bool vec = gemm_tuning().vector_loads && p.kind == ComputeKind::Float32;
  const bool va = vec && vec4_aligned(p.a, p.batch);
  const bool vb = vec && vec4_aligned(p.b, p.batch);
  const bool a_k = va && p.a.col_stride == 1 && p.k % 4 == 0 && p.a.row_stride % 4 == 0;
  const bool a_m = va && p.a.row_stride == 1 && p.m % 4 == 0 && p.a.col_stride % 4 == 0;
  const bool b_n = vb && p.b.col_stride == 1 && p.n % 4 == 0 && p.b.row_stride % 4 == 0;
  const bool b_k = vb && p.b.row_stride == 1 && p.k % 4 == 0 && p.b.col_stride % 4 == 0;
  if (texel) {
    a_load = texel->a_load;
    b_load = texel->b_load;
  } else if (cfg.lanes) {
    // Groups as one 64-bit load (2 float32 or 4 float16 / bfloat16 values): contiguous along
    // the group axis, 8-byte aligned, and a length that is a multiple of the group so that no
    // group straddles the end.
    const DeviceCapabilities& caps = stream.device().caps();
    const bool groups = gemm_tuning().vector_loads && p.kind == ComputeKind::Float32 &&
                        caps.subgroup_extended_types && caps.int64;
    auto group_ok = [&](const GemmMatrix& x, int64_t length, int64_t other_stride) {
      const int64_t g = group_elements(x.dtype);
      return groups && g != 0 && x.address % 8 == 0 && length % g == 0 &&
             other_stride % g == 0 && (p.batch == 1 || x.batch_stride % g == 0);
    };
    if (p.a.col_stride == 1 && group_ok(p.a, p.k, p.a.row_stride)) a_load = 4;
    if (p.b.col_stride == 1 && group_ok(p.b, p.n, p.b.row_stride) &&
        cfg.tn % group_elements(p.b.dtype) == 0)
      b_load = 4;
  } else if (cfg.tiled) {
    if (a_k)
      a_load = 2;
    else if (a_m && cfg.bm() % 4 == 0)
      a_load = 3;
    else
      a_load = abs64(p.a.col_stride) <= abs64(p.a.row_stride) ? 0 : 1;
    if (b_n && cfg.bn() % 4 == 0)
      b_load = 2;
    else if (b_k)
      b_load = 3;
    else
      b_load = abs64(p.b.col_stride) <= abs64(p.b.row_stride) ? 0 : 1;
  } else {
    if (a_k)
      a_load = 2;
    else if (a_m && cfg.tm % 4 == 0)
      a_load = 3;
    if (b_k)
      b_load = 3;
    else if (b_n && cfg.tn % 4 == 0)
      b_load = 2;
  }
  // Unit strides fold the index math of the direct loops; the tiled loops read shared memory
  // and the lanes loops are bound by loads, so they are not specialized for them (fewer
  // pipelines).
  uint32_t unit = 0;
  if (!cfg.tiled && !cfg.lanes && !cfg.texel)
    unit = (p.a.col_stride == 1 ? 1u : 0u) | (p.a.row_stride == 1 ? 2u : 0u) |
           (p.b.row_stride == 1 ? 4u : 0u) | (p.b.col_stride == 1 ? 8u : 0u) |
           (p.c.col_stride == 1 ? 16u : 0u) | (p.c.row_stride == 1 ? 32u : 0u);
  const DeviceCapabilities& caps = stream.device().caps();
  auto groups = [&](int64_t items, int dim) { return detail::grid_groups(caps, items, dim); };
  const int64_t tiles_m = (p.m + cfg.bm() - 1) / cfg.bm();
  const int64_t tiles_n = (p.n + cfg.bn() - 1) / cfg.bn();
  const uint32_t gx = groups(tiles_n, 0), gy = groups(tiles_m, 1), gz = groups(p.batch, 2);
  // Only the texel algorithm (CPU devices, where the loops cost) is specialized for it.
  const uint32_t exact_grid = texel && gx == tiles_n && gy == tiles_m && gz == p.batch ? 1 : 0;
  std::vector<uint32_t> spec = {
      static_cast<uint32_t>(p.a.dtype),
      static_cast<uint32_t>(p.b.dtype),
      static_cast<uint32_t>(p.c.dtype),
      has_bias ? static_cast<uint32_t>(p.bias.dtype) : UINT32_MAX,  // -1: no bias
      cfg.tm, cfg.tn, cfg.wm, cfg.wn, cfg.bk, a_load, b_load, unit, exact_grid, cfg.stages};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, cfg.workgroup(), spec);
  // A run-time epilogue reads and writes more operands through its argument block: what its
  // caller declared, else ordered against everything.
  AccessSet accesses = detail::gemm_accesses(p);
  if (epilogue_shader && epilogue_accesses) {
    if (!epilogue_accesses->known()) accesses.everything();
    for (int i = 0; i < epilogue_accesses->size(); ++i) {
      const MemoryRange& r = (*epilogue_accesses)[i];
      if (r.write)
        accesses.write(r.begin, r.end - r.begin);
      else
        accesses.read(r.begin, r.end - r.begin);
    }
  }
  const bool declared = !epilogue_shader || epilogue_accesses;
  stream.dispatch(pipeline, gx, gy, gz, &push, sizeof(push), texel ? texel->views : nullptr,
                  texel ? 6 : 0, declared ? &accesses : nullptr);
  g_last_algorithm = texel ? "texel" : cfg.texel ? "?" : algo_name(cfg);
}

// The configuration for `p`, with its texel operands bound when it is the texel algorithm
// (if they cannot be bound, the best other configuration).
Config choose_and_bind(Stream& stream, const Gemm& p, TexelOperands* texel, bool* use_texel) {
  Config cfg = choose_config(stream, p);
  *use_texel = cfg.texel && bind_texel(stream, p, cfg, texel);
  if (cfg.texel && !*use_texel) cfg = choose_config(stream, p, false);
  return cfg;
}

void record_auto(Stream& stream, const Gemm& p) {
  TexelOperands texel;
  bool use_texel = false;
  const Config cfg = choose_and_bind(stream, p, &texel, &use_texel);
  record(stream, p, cfg, nullptr, 0, use_texel ? &texel : nullptr);
}

// Few outputs and a long k: split k into chunks (partial products in a temporary of the
// accumulator dtype), then combine the partials with alpha, beta and the bias.
bool try_split_k(Stream& stream, const Gemm& p, const Config& cfg) {
  const GemmTuning& t = gemm_tuning();
  if (t.split_k_min <= 0 || p.batch != 1 || p.k < t.split_k_min || p.k < 2) return false;
  const int64_t tiles = ((p.m + cfg.bm() - 1) / cfg.bm()) * ((p.n + cfg.bn() - 1) / cfg.bn());
  if (tiles >= 16) return false;
  const int64_t target = std::max<int64_t>(t.split_k_chunk, 16);
  int64_t splits = std::clamp<int64_t>((p.k + target - 1) / target, 2, 256);
  int64_t chunk = (p.k + splits - 1) / splits;
  chunk = (chunk + 15) / 16 * 16;  // keeps vec4 alignment of the chunk bases
  const int64_t full = p.k / chunk, rest = p.k - full * chunk;
  const int64_t parts = full + (rest > 0 ? 1 : 0);
  if (parts < 2) return false;
  const int64_t outputs = p.m * p.n;
  if (outputs * parts > kMaxIndex || outputs > kMaxIndex / 2) return false;

  const DType pdt = acc_dtype(p.kind);
  Allocator& allocator = stream.device().allocator();
  const uint64_t partials =
      allocator.allocate(static_cast<uint64_t>(outputs * parts) * dtype_size(pdt), stream.id());
  try {
    // Pass 1: partial[s] = A[:, chunk s] @ B[chunk s, :], row-major m x n each.
    Gemm part = p;
    part.bias = GemmMatrix{};
    part.alpha = GemmScalar{1.0, 1};
    part.beta = GemmScalar{0.0, 0};
    part.c = GemmMatrix{partials, pdt, p.n, 1, outputs};
    part.batch = full;
    part.k = chunk;
    part.a.batch_stride = chunk * p.a.col_stride;
    part.b.batch_stride = chunk * p.b.row_stride;
    record_auto(stream, part);
    if (rest > 0) {
      Gemm tail = part;
      tail.batch = 1;
      tail.k = rest;
      const int64_t k0 = full * chunk;
      tail.a.address = p.a.address + static_cast<uint64_t>(k0 * p.a.col_stride * int64_t(dtype_size(p.a.dtype)));
      tail.b.address = p.b.address + static_cast<uint64_t>(k0 * p.b.row_stride * int64_t(dtype_size(p.b.dtype)));
      tail.c.address = partials + static_cast<uint64_t>(full * outputs) * dtype_size(pdt);
      record_auto(stream, tail);
    }
    // Pass 2, batched over columns j: C[:, j] = alpha * P_j @ ones + beta * bias[:, j] with
    // P_j[i][s] = partial[s][i][j] (m x parts) and ones a broadcast parts x 1 vector.
    Gemm combine = p;
    combine.batch = p.n;
    combine.n = 1;
    combine.k = parts;
    combine.a = GemmMatrix{partials, pdt, p.n, outputs, 1};
    uint8_t one[8] = {};
    switch (p.kind) {
      case ComputeKind::Float32: { float v = 1; std::memcpy(one, &v, 4); break; }
      case ComputeKind::Float64: { double v = 1; std::memcpy(one, &v, 8); break; }
      case ComputeKind::Int32: { int32_t v = 1; std::memcpy(one, &v, 4); break; }
      case ComputeKind::Int64: { int64_t v = 1; std::memcpy(one, &v, 8); break; }
    }
    combine.b = GemmMatrix{stream.upload_params(one, sizeof one), pdt, 0, 0, 0};
    combine.c = GemmMatrix{p.c.address, p.c.dtype, p.c.row_stride, 0, p.c.col_stride};
    if (combine.bias.address != 0)
      combine.bias = GemmMatrix{p.bias.address, p.bias.dtype, p.bias.row_stride, 0,
                                p.bias.col_stride};
    record_auto(stream, combine);
  } catch (...) {
    allocator.free(partials);
    throw;
  }
  // Stream order makes the immediate free safe: later reuse is ordered after the combine.
  allocator.free(partials);
  return true;
}

}  // namespace

namespace detail {

uint64_t scalar_bits(ComputeKind kind, const GemmScalar& s) {
  uint64_t bits = 0;
  switch (kind) {
    case ComputeKind::Float32: {
      float f = static_cast<float>(s.f);
      std::memcpy(&bits, &f, sizeof f);
      break;
    }
    case ComputeKind::Float64: std::memcpy(&bits, &s.f, sizeof s.f); break;
    case ComputeKind::Int32: {
      int32_t v = static_cast<int32_t>(static_cast<uint32_t>(s.i));
      std::memcpy(&bits, &v, sizeof v);
      break;
    }
    case ComputeKind::Int64: std::memcpy(&bits, &s.i, sizeof s.i); break;
  }
  return bits;
}

GemmPush gemm_push(const Gemm& p) {
  const bool has_bias = p.bias.address != 0;
  GemmPush push{};
  push.a = p.a.address;
  push.b = p.b.address;
  push.c = p.c.address;
  push.bias = has_bias ? p.bias.address : 0;
  push.a_bs = p.a.batch_stride;
  push.b_bs = p.b.batch_stride;
  push.c_bs = p.c.batch_stride;
  push.bias_bs = has_bias ? p.bias.batch_stride : 0;
  push.alpha_bits = scalar_bits(p.kind, p.alpha);
  push.beta_bits = scalar_bits(p.kind, p.beta);
  push.m = static_cast<int32_t>(p.m);
  push.n = static_cast<int32_t>(p.n);
  push.k = static_cast<int32_t>(p.k);
  push.batch = static_cast<int32_t>(p.batch);
  push.a_rs = static_cast<int32_t>(p.a.row_stride);
  push.a_cs = static_cast<int32_t>(p.a.col_stride);
  push.b_rs = static_cast<int32_t>(p.b.row_stride);
  push.b_cs = static_cast<int32_t>(p.b.col_stride);
  push.c_rs = static_cast<int32_t>(p.c.row_stride);
  push.c_cs = static_cast<int32_t>(p.c.col_stride);
  if (has_bias) {
    push.bias_rs = static_cast<int32_t>(p.bias.row_stride);
    push.bias_cs = static_cast<int32_t>(p.bias.col_stride);
  }
  return push;
}

void record_portable(Stream& stream, const Gemm& p) { record_auto(stream, p); }

uint32_t grid_groups(const DeviceCapabilities& caps, int64_t items, int dim) {
  const int64_t cap = std::min<int64_t>(tuning().max_workgroups, caps.max_workgroup_count[dim]);
  return static_cast<uint32_t>(std::clamp<int64_t>(items, 1, std::max<int64_t>(cap, 1)));
}

void set_last_gemm_algorithm(const char* name) { g_last_algorithm = name; }

AccessSet gemm_accesses(const Gemm& p) {
  AccessSet set;
  auto add = [&](const GemmMatrix& x, int64_t rows, int64_t cols, bool write) {
    const int64_t sizes[3] = {rows, cols, p.batch};
    const int64_t strides[3] = {x.row_stride, x.col_stride, x.batch_stride};
    add_strided(set, x.address, x.dtype, 3, sizes, strides, write);
  };
  add(p.a, p.m, p.k, false);
  add(p.b, p.k, p.n, false);
  add(p.bias, p.m, p.n, false);
  add(p.c, p.m, p.n, true);
  return set;
}

}  // namespace detail

GemmTuning& gemm_tuning() {
  static GemmTuning t = [] {
    GemmTuning d;
    const char* v = std::getenv("TORCH_VK_GEMM_ALGO");
    if (v && std::string(v) == "tiled") d.algo = GemmTuning::Algo::Tiled;
    if (v && std::string(v) == "direct") d.algo = GemmTuning::Algo::Direct;
    if (v && std::string(v) == "lanes") d.algo = GemmTuning::Algo::Lanes;
    if (v && std::string(v) == "texel") d.algo = GemmTuning::Algo::Texel;
    if (const char* g = std::getenv("TORCH_VK_GEMM_PROFILE")) {
      using Vendor = GemmTuning::Vendor;
      const std::string name(g);
      d.gpu_vendor = name == "nvidia" ? Vendor::Nvidia : name == "amd" ? Vendor::Amd
                     : name == "intel" ? Vendor::Intel : name == "mobile" ? Vendor::Mobile
                     : name == "generic" ? Vendor::Generic : Vendor::Auto;
    }
    const char* cm = std::getenv("TORCH_VK_GEMM_COOPMAT");
    if (cm && (std::string(cm) == "0" || std::string(cm) == "off"))
      d.coopmat = GemmTuning::Coopmat::Off;
    if (cm && std::string(cm) == "emulate") d.coopmat = GemmTuning::Coopmat::Emulate;
    if (const char* tile = std::getenv("TORCH_VK_GEMM_COOPMAT_TILE")) {
      uint32_t t[8] = {};
      const int n = std::sscanf(tile, "%u,%u,%u,%u,%u,%u,%u,%u", &t[0], &t[1], &t[2], &t[3],
                                &t[4], &t[5], &t[6], &t[7]);
      if (n == 5 || n == 8) {
        d.coopmat_bm = t[0], d.coopmat_bn = t[1], d.coopmat_bk = t[2];
        d.coopmat_warps_m = t[3], d.coopmat_warps_n = t[4];
        d.coopmat_cm = t[5], d.coopmat_cn = t[6], d.coopmat_ck = t[7];
      }
    }
    const char* check = std::getenv("TORCH_VK_GEMM_COOPMAT_SELF_CHECK");
    d.coopmat_fail_self_check = check && std::string(check) == "fail";
    return d;
  }();
  return t;
}

const char* last_gemm_algorithm() { return g_last_algorithm; }

ComputeKind gemm_kind_for(DType dtype) {
  switch (dtype) {
    case DType::Float64: return ComputeKind::Float64;
    case DType::Int64: return ComputeKind::Int64;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32: return ComputeKind::Float32;
    default: return ComputeKind::Int32;
  }
}

namespace {

// Validates `p` and normalizes what is read (no bias when beta == 0, no product when k == 0
// or alpha == 0). Returns false when there is nothing to record. With an epilogue C is not
// written and not checked.
bool validate_and_normalize(Stream& stream, Gemm& p, bool epilogue) {
  const int kind = static_cast<int>(p.kind);
  if (kind < 0 || kind > 3) invalid(kWhere, "invalid compute kind " + std::to_string(kind));
  if (p.kind == ComputeKind::Float64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (p.batch < 0 || p.m < 0 || p.n < 0 || p.k < 0) invalid(kWhere, "negative size");
  if (p.batch > kMaxIndex || p.m > kMaxDim || p.n > kMaxDim || p.k > kMaxDim)
    invalid(kWhere, "sizes exceed the kernel's 32-bit index range");
  if (p.batch == 0 || p.m == 0 || p.n == 0) return false;

  if (p.bias.address != 0 && is_zero(p.kind, p.beta)) p.bias = GemmMatrix{};
  if (p.k == 0 || is_zero(p.kind, p.alpha)) {
    p.k = 0;
    p.alpha = GemmScalar{0.0, 0};
  }
  if (epilogue) {
    check_dtype(kWhere, p.c.dtype, "C");
    p.c = GemmMatrix{0, p.c.dtype, 0, 0, 0};
  } else {
    check_matrix(p.c, p.m, p.n, "C");
  }
  if (p.k > 0) {
    check_matrix(p.a, p.m, p.k, "A");
    check_matrix(p.b, p.k, p.n, "B");
  } else {
    // Never loaded: any valid address keeps the push constants well-defined.
    const GemmMatrix& any = epilogue ? (p.bias.address ? p.bias : p.a) : p.c;
    p.a = GemmMatrix{any.address, any.dtype, 0, 0, 0};
    p.b = p.a;
  }
  if (p.bias.address != 0) check_matrix(p.bias, p.m, p.n, "bias");
  for (const GemmMatrix* x : {&p.a, &p.b, &p.c, &p.bias}) {
    if (x->address == 0) continue;
    if (x->dtype == DType::Float64 && p.kind != ComputeKind::Float64)
      invalid(kWhere, "float64 operands need the float64 compute kind");
  }
  return true;
}

// Registered epilogues; each GEMM algorithm's variant is built on first use. Entries are
// never removed, so the kernels they point to stay valid.
struct EpilogueEntry {
  std::string glsl, name;
  // tiled, direct, lanes, then texel for float32 / float16 / bfloat16 operands
  std::array<const GeneratedKernel*, 6> variants{};
};
struct EpilogueRegistry {
  std::mutex mutex;
  std::vector<std::unique_ptr<EpilogueEntry>> entries;
};
EpilogueRegistry& epilogues() {
  static EpilogueRegistry r;
  return r;
}

// The source of gemm.comp with `defines` after its #version line and the epilogue appended.
std::string epilogue_source(const std::string& defines, const std::string& epilogue) {
  const std::string_view gemm = shader_source("gemm.comp");
  if (gemm.empty()) invalid(kWhere, "gemm.comp is not embedded in this build");
  const size_t eol = gemm.find('\n');
  std::string source(gemm.substr(0, eol + 1));
  source += defines;
  source += gemm.substr(eol + 1);
  source += "\n// ---------------------------------------------------------------- epilogue\n";
  source += epilogue;
  source += "\n";
  return source;
}

const ShaderBinary& epilogue_variant(const Config& cfg, ComputeKind kind, DType operands,
                                     int64_t id) {
  EpilogueEntry* entry = nullptr;
  {
    EpilogueRegistry& r = epilogues();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (id < 0 || id >= static_cast<int64_t>(r.entries.size()))
      invalid(kWhere, "no GEMM epilogue with id " + std::to_string(id));
    entry = r.entries[static_cast<size_t>(id)].get();
  }
  const int texel_dtype = operands == DType::Float16 ? 1 : operands == DType::BFloat16 ? 2 : 0;
  const int slot = cfg.texel ? 3 + texel_dtype : cfg.lanes ? 2 : cfg.tiled ? 0 : 1;
  const GeneratedKernel* kernel = entry->variants[static_cast<size_t>(slot)];
  if (!kernel) {
    std::string defines = "#define GEMM_EPILOGUE 1\n#define KIND " +
                          std::to_string(static_cast<int>(kind)) + "\n";
    if (cfg.texel) defines += "#define TEXEL_DTYPE " + std::to_string(texel_dtype) + "\n";
    defines += cfg.texel   ? "#define GEMM_TEXEL 1\n"
               : cfg.lanes ? "#define GEMM_LANES 1\n"
               : cfg.tiled ? "#define GEMM_TILED 1\n"
                           : "#define GEMM_TILED 0\n";
    kernel = &compile_generated(epilogue_source(defines, entry->glsl),
                                entry->name + "." + algo_name(cfg));
    EpilogueRegistry& r = epilogues();
    std::lock_guard<std::mutex> lock(r.mutex);
    entry->variants[static_cast<size_t>(slot)] = kernel;
  }
  return kernel->binary;
}

}  // namespace

int64_t register_gemm_epilogue(const std::string& glsl, const std::string& name) {
  EpilogueRegistry& r = epilogues();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.entries.size(); ++i)
    if (r.entries[i]->glsl == glsl) return static_cast<int64_t>(i);
  auto entry = std::make_unique<EpilogueEntry>();
  entry->glsl = glsl;
  entry->name = name;
  r.entries.push_back(std::move(entry));
  return static_cast<int64_t>(r.entries.size() - 1);
}

void gemm(Stream& stream, const Gemm& problem) {
  Gemm p = problem;
  if (!validate_and_normalize(stream, p, false)) return;

  // Transpose the problem (C^T = B^T A^T) when that makes C row-major (coalesced stores) or
  // turns a row vector result into a column (the skinny n == 1 configuration).
  const bool col_major_c = p.c.row_stride == 1 && abs64(p.c.col_stride) != 1 && p.m > 1;
  if (gemm_tuning().transpose_output && ((p.m == 1 && p.n > 1) || col_major_c)) {
    std::swap(p.m, p.n);
    GemmMatrix a = p.a;
    p.a = p.b.transposed();
    p.b = a.transposed();
    p.c = p.c.transposed();
    if (p.bias.address != 0) p.bias = p.bias.transposed();
  }

  if (p.k > 0 && detail::try_gemm_coopmat(stream, p)) return;
  TexelOperands texel;
  bool use_texel = false;
  const Config cfg = choose_and_bind(stream, p, &texel, &use_texel);
  if (p.k > 0 && try_split_k(stream, p, cfg)) return;
  record(stream, p, cfg, nullptr, 0, use_texel ? &texel : nullptr);
}

void gemm(Stream& stream, const Gemm& problem, const GemmEpilogueCall& epilogue) {
  Gemm p = problem;
  if (p.kind != ComputeKind::Float32)
    invalid(kWhere, "GEMM epilogues need the float32 compute kind");
  if (epilogue.args_bytes > 0 && !epilogue.args)
    invalid(kWhere, "null epilogue argument block with a positive size");
  if (!validate_and_normalize(stream, p, true)) return;
  TexelOperands texel;
  bool use_texel = false;
  const Config cfg = choose_and_bind(stream, p, &texel, &use_texel);
  const ShaderBinary& shader = epilogue_variant(cfg, p.kind, p.a.dtype, epilogue.id);
  const uint64_t args =
      epilogue.args_bytes > 0 ? stream.upload_params(epilogue.args, epilogue.args_bytes) : 0;
  record(stream, p, cfg, &shader, args, use_texel ? &texel : nullptr, epilogue.accesses);
}

}  // namespace tvk::kernels
