// Launcher of the sparse family (shaders/sparse.comp): one invocation per output element of
// CSR sparse @ dense (coalesced across the dense columns), 1-D grid with a grid-stride loop.
#include "kernels/sparse.h"

#include <string>
#include <vector>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/sparse.comp.
struct SpmmPush {
  uint64_t row_ptr_addr;
  uint64_t cols_addr;
  uint64_t values_addr;
  uint64_t dense_addr;
  uint64_t out_addr;
  int32_t rows;
  int32_t n;
  int32_t val_dtype;
  int32_t dense_dtype;
  int32_t out_dtype;
  int32_t pad;
};
static_assert(sizeof(SpmmPush) == 64);

constexpr const char* kWhere = "tvk::kernels::spmm";
constexpr uint32_t kWorkgroup = 128;

void check_index_operand(const Operand& op, const char* what) {
  check_operand(kWhere, op, what, false);
  if (op.dtype != DType::Int64) invalid(kWhere, std::string(what) + " must be int64");
}

}  // namespace

void spmm(Stream& stream, const Spmm& p) {
  if (p.kind != ComputeKind::Float32 && p.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = p.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (p.rows < 0 || p.k < 0 || p.n < 0 || p.nnz < 0) invalid(kWhere, "negative size");
  if (p.rows == 0 || p.n == 0) return;
  int64_t out_numel = 0, dense_numel = 0;
  if (__builtin_mul_overflow(p.rows, p.n, &out_numel) || out_numel > kMaxIndex ||
      __builtin_mul_overflow(p.k, p.n, &dense_numel) || dense_numel > kMaxIndex || p.nnz > kMaxIndex ||
      p.rows + 1 > kMaxIndex)
    invalid(kWhere, "more elements than the kernel's 32-bit index range");
  check_index_operand(p.row_ptr, "row pointers");
  if (p.nnz > 0) {
    check_index_operand(p.cols, "column indices");
    check_operand(kWhere, p.values, "values", f64);
  }
  if (dense_numel > 0) check_operand(kWhere, p.dense, "dense", f64);
  check_operand(kWhere, p.out, "output", f64);

  const std::string name = std::string("sparse.spmm.") + (f64 ? "float64" : "float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");

  // With nnz == 0 every row is empty and only out is written; unused addresses stay valid ones.
  const DType val_dtype = p.nnz > 0 ? p.values.dtype : p.out.dtype;
  const DType dense_dtype = dense_numel > 0 ? p.dense.dtype : p.out.dtype;
  SpmmPush push{};
  push.row_ptr_addr = p.row_ptr.address;
  push.cols_addr = p.nnz > 0 ? p.cols.address : 0;
  push.values_addr = p.nnz > 0 ? p.values.address : 0;
  push.dense_addr = dense_numel > 0 ? p.dense.address : 0;
  push.out_addr = p.out.address;
  push.rows = static_cast<int32_t>(p.rows);
  push.n = static_cast<int32_t>(p.n);
  push.val_dtype = static_cast<int32_t>(val_dtype);
  push.dense_dtype = static_cast<int32_t>(dense_dtype);
  push.out_dtype = static_cast<int32_t>(p.out.dtype);
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(val_dtype), static_cast<uint32_t>(dense_dtype),
            static_cast<uint32_t>(p.out.dtype)};
  else
    spec = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, spec);
  const uint32_t groups = group_count(stream, out_numel, kWorkgroup);
  AccessSet accesses;  // absent operands (address 0 in the push) add nothing
  add_dense(accesses, p.row_ptr.address, DType::Int64, p.rows + 1, false);
  add_dense(accesses, push.cols_addr, DType::Int64, p.nnz, false);
  add_dense(accesses, push.values_addr, val_dtype, p.nnz, false);
  add_dense(accesses, push.dense_addr, dense_dtype, dense_numel, false);
  add_dense(accesses, p.out.address, p.out.dtype, out_numel, true);
  stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
}

}  // namespace tvk::kernels
