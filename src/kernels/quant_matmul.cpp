// Launcher of the weight-only quantized matmul (shaders/quant_matmul.comp): the GEMV variant
// for decode (M <= kQuantGemvMaxRows), the tiled one for prefill. The parameters go in an
// uploaded block.
#include "kernels/quant_matmul.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

constexpr const char* kWhere = "tvk::kernels::weight_only_matmul";
constexpr int64_t kGemvColumns = 4;    // NC in the shader
constexpr int64_t kGemvThreads = 64;   // WG
constexpr int64_t kTile = 32;          // BM = BN = BK

// Mirrors `Params` in the shader (std430).
struct QuantParams {
  uint64_t a, w, s, c;
  int32_t M, N, K, lda;
  int32_t ldc, a_dtype, group, words;
};
static_assert(sizeof(QuantParams) == 64);

}  // namespace

QuantMatmulAlgo quant_matmul_algorithm(Stream& stream, int64_t rows) {
  if (const char* v = std::getenv("TORCH_VK_QUANT_MATMUL_ALGO")) {
    if (std::strcmp(v, "rows") == 0) return QuantMatmulAlgo::Rows;
    if (std::strcmp(v, "tiled") == 0) return QuantMatmulAlgo::Tiled;
  }
  // lavapipe measured (benchmarks/bench_quant.py, 1024 x 1024): decode 6.6 ms rows vs 47 ms
  // GEMV; 64 rows 418 ms rows vs 172 ms tiled.
  return stream.device().caps().device_type == "cpu" && rows <= kQuantGemvMaxRows
             ? QuantMatmulAlgo::Rows
             : QuantMatmulAlgo::Tiled;
}

void weight_only_matmul(Stream& stream, const WeightOnlyMatmul& p) {
  const bool int4 = p.weights == QuantWeights::Int4;
  if (p.M < 0 || p.N < 0 || p.K < 0) invalid(kWhere, "negative size");
  if (p.M == 0 || p.N == 0) return;
  const DType dt = p.a.dtype;
  if (dt != DType::Float32 && dt != DType::Float16 && dt != DType::BFloat16)
    invalid(kWhere, "activations must be float32, float16 or bfloat16");
  if (p.c.dtype != dt || p.scales.dtype != dt)
    invalid(kWhere, "scales and the output must have the activations' dtype");
  if (p.weight.dtype != (int4 ? DType::UInt8 : DType::Int8))
    invalid(kWhere, int4 ? "int4 weights must be uint8 bytes" : "int8 weights must be int8");
  check_operand(kWhere, p.a, "a", false);
  check_operand(kWhere, p.weight, "weight", false);
  check_operand(kWhere, p.scales, "scales", false);
  check_operand(kWhere, p.c, "c", false);
  if (int4) {
    const int64_t g = p.group_size;
    if (g != 32 && g != 64 && g != 128 && g != 256)
      invalid(kWhere, "the int4 group size must be 32, 64, 128 or 256");
    if (p.K % g != 0) invalid(kWhere, "K must be a multiple of the group size");
  }
  if (p.lda < p.K || p.ldc < p.N) invalid(kWhere, "row strides shorter than the rows");
  // Every element offset (A, C, weight bytes, scale pairs) must fit in int32.
  const int64_t row_bytes = int4 ? p.K / 2 : p.K;
  if ((p.M - 1) > (kMaxIndex - p.K) / std::max<int64_t>(p.lda, 1) ||
      (p.M - 1) > (kMaxIndex - p.N) / std::max<int64_t>(p.ldc, 1) ||
      p.N > kMaxIndex / std::max<int64_t>(row_bytes, 1) ||
      (int4 && (p.K / p.group_size) * p.N > kMaxIndex / 2))
    invalid(kWhere, "offsets beyond the 32-bit index range");

  const QuantMatmulAlgo algo = quant_matmul_algorithm(stream, p.M);
  const bool rows = algo == QuantMatmulAlgo::Rows;
  const bool gemv = !rows && p.M <= kQuantGemvMaxRows;
  // Rows: one invocation per output element (grid-stride), its loop over the row's words.
  const int64_t outputs = p.M * p.N;
  const uint32_t row_groups = rows ? group_count(stream, outputs, kGemvThreads) : 0;
  const int64_t per_invocation =
      rows ? (outputs + int64_t{row_groups} * kGemvThreads - 1) / (int64_t{row_groups} * kGemvThreads)
           : 0;
  // Loop iterations of one invocation: rows walk K a word at a time per output; GEMV strides
  // over the words of a row; the tiled kernel steps through K a tile at a time (its inner
  // loops are unrolled).
  const int64_t steps = rows ? per_invocation * (p.K + 1) + 1
                        : gemv ? (row_bytes + 4 * kGemvThreads - 1) / (4 * kGemvThreads) + kTile
                               : (p.K + kTile - 1) / kTile + 8;
  if (steps > loop_budget(stream)) invalid(kWhere, "K exceeds the device's loop-iteration limit");

  QuantParams a{};
  a.a = p.a.address;
  a.w = p.weight.address;
  a.s = p.scales.address;
  a.c = p.c.address;
  a.M = static_cast<int32_t>(p.M);
  a.N = static_cast<int32_t>(p.N);
  a.K = static_cast<int32_t>(p.K);
  a.lda = static_cast<int32_t>(p.lda);
  a.ldc = static_cast<int32_t>(p.ldc);
  a.a_dtype = static_cast<int32_t>(dt);
  a.group = static_cast<int32_t>(int4 ? p.group_size : 0);
  // 32-bit weight reads when every row starts on a word boundary (int4: K is a multiple of 32).
  a.words = (row_bytes % 4 == 0 && p.weight.address % 4 == 0) ? 1 : 0;

  const std::string name = std::string(rows   ? "quant_matmul.rows."
                                       : gemv ? "quant_matmul.gemv."
                                              : "quant_matmul.tiled.") +
                           (int4 ? "int4" : "int8");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  const uint64_t params = stream.upload_params(&a, sizeof a);
  // A (M rows lda apart), the weight bytes and the scales read; C (M rows ldc apart) written.
  AccessSet accesses;
  const int64_t a_sizes[2] = {p.K, p.M}, a_strides[2] = {1, p.lda};
  const int64_t c_sizes[2] = {p.N, p.M}, c_strides[2] = {1, p.ldc};
  add_strided(accesses, p.a.address, dt, 2, a_sizes, a_strides, false);
  add_dense(accesses, p.weight.address, DType::UInt8, p.N * row_bytes, false);
  add_dense(accesses, p.scales.address, p.scales.dtype,
            int4 ? (p.K / p.group_size) * p.N * 2 : p.N, false);
  add_strided(accesses, p.c.address, p.c.dtype, 2, c_sizes, c_strides, true);
  if (rows) {
    VkPipeline pipeline = stream.device().pipelines().get(*shader, kGemvThreads);
    stream.dispatch(pipeline, row_groups, 1, 1, &params, sizeof params, nullptr, 0, &accesses);
  } else if (gemv) {
    const uint64_t groups = (p.N + kGemvColumns - 1) / kGemvColumns;
    if (groups > stream.device().caps().max_workgroup_count[0])
      invalid(kWhere, "more output columns than the device's workgroup count allows");
    VkPipeline pipeline = stream.device().pipelines().get(*shader, kGemvThreads);
    stream.dispatch(pipeline, static_cast<uint32_t>(groups), 1, 1, &params, sizeof params,
                    nullptr, 0, &accesses);
  } else {
    const uint64_t gx = (p.N + kTile - 1) / kTile, gy = (p.M + kTile - 1) / kTile;
    if (gx > stream.device().caps().max_workgroup_count[0] ||
        gy > stream.device().caps().max_workgroup_count[1])
      invalid(kWhere, "more output tiles than the device's workgroup count allows");
    VkPipeline pipeline = stream.device().pipelines().get(*shader, 256);
    stream.dispatch(pipeline, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1, &params,
                    sizeof params, nullptr, 0, &accesses);
  }
}

}  // namespace tvk::kernels
