// Launcher of the search family (shaders/search.comp): one invocation per input element
// (binary searches; histogram counts with shared-memory privatization for small bin counts).
#include "kernels/search.h"

#include <cstring>
#include <string>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` of OP 0 in shaders/search.comp.
struct BsearchPush {
  uint64_t in_addr;
  uint64_t bd_addr;
  uint64_t sorter_addr;
  uint64_t out_addr;
  int32_t numel;
  int32_t idim_in;
  int32_t idim_bd;
  int32_t flags;
  int32_t in_dtype;
  int32_t out_dtype;
};
static_assert(sizeof(BsearchPush) == 56);

// Mirrors `Push` of OP 1.
struct HistcPush {
  uint64_t in_addr;
  uint64_t counts_addr;
  uint64_t left_bits;
  uint64_t right_bits;
  int32_t numel;
  int32_t bins;
  int32_t in_dtype;
  int32_t use_shared;
};
static_assert(sizeof(HistcPush) == 48);

constexpr int kFlagRight = 1, kFlag1D = 2, kFlagSorter = 4, kFlagIsIn = 8, kFlagInvert = 16;
constexpr int64_t kHistSharedBins = 2048;  // HIST_SHARED_BINS
constexpr uint32_t kWorkgroup = 128;

// Comparison kind of a storage dtype.
ComputeKind kind_of(DType t) {
  switch (t) {
    case DType::Float64: return ComputeKind::Float64;
    case DType::Float32: case DType::Float16: case DType::BFloat16: return ComputeKind::Float32;
    default: return ComputeKind::Int64;
  }
}

void check_addr(const char* where, const Operand& op, const char* what) {
  check_dtype(where, op.dtype, what);
  if (op.address == 0) invalid(where, std::string(what) + ": address is 0");
  if (op.address % dtype_size(op.dtype) != 0)
    invalid(where, std::string(what) + ": address is not aligned to its element size");
}

void check_f64(Stream& stream, ComputeKind kind) {
  if (kind == ComputeKind::Float64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
}

void dispatch(Stream& stream, const std::string& name, int64_t items, const void* push,
              uint32_t bytes, const char* where) {
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(where, "no shader variant '" + name + "' (stale build?)");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, {});
  stream.dispatch(pipeline, group_count(stream, items, kWorkgroup), 1, 1, push, bytes);
}

void bsearch(Stream& stream, int64_t numel, int64_t inner, int64_t n, int flags,
             const Operand& in, const Operand& bd, const Operand& sorter, const Operand& out,
             const char* where) {
  if (numel < 0 || inner < 1 || n < 0) invalid(where, "bad sizes");
  if (numel == 0) return;
  if (numel > kMaxIndex) invalid(where, "more elements than the kernel's 32-bit index range");
  check_addr(where, in, "input");
  check_addr(where, out, "output");
  if (n > 0) check_addr(where, bd, "boundaries");
  if (in.dtype != bd.dtype) invalid(where, "input and boundaries must have the same dtype");
  const int64_t rows = (flags & kFlag1D) ? 1 : numel / inner;
  int64_t bd_numel = 0;
  if (__builtin_mul_overflow(rows, n, &bd_numel) || bd_numel > kMaxIndex)
    invalid(where, "more boundaries than the kernel's 32-bit index range");
  if (flags & kFlagSorter) {
    check_addr(where, sorter, "sorter");
    if (sorter.dtype != DType::Int64) invalid(where, "sorter must be int64");
  }
  const ComputeKind kind = kind_of(in.dtype);
  check_f64(stream, kind);
  BsearchPush push{};
  push.in_addr = in.address;
  push.bd_addr = bd.address;
  push.sorter_addr = (flags & kFlagSorter) ? sorter.address : 0;
  push.out_addr = out.address;
  push.numel = static_cast<int32_t>(numel);
  push.idim_in = static_cast<int32_t>(inner);
  push.idim_bd = static_cast<int32_t>(n);
  push.flags = flags;
  push.in_dtype = static_cast<int32_t>(in.dtype);
  push.out_dtype = static_cast<int32_t>(out.dtype);
  dispatch(stream, std::string("search.bsearch.") + compute_kind_name(kind), numel, &push,
           sizeof(push), where);
}

}  // namespace

void search_sorted(Stream& stream, const SearchSorted& p) {
  constexpr const char* kWhere = "tvk::kernels::search_sorted";
  if (p.out.dtype != DType::Int32 && p.out.dtype != DType::Int64)
    invalid(kWhere, "output must be int32 or int64");
  int flags = (p.right ? kFlagRight : 0) | (p.one_dim ? kFlag1D : 0) |
              (p.sorter.address != 0 ? kFlagSorter : 0);
  if (!p.one_dim && p.numel % p.inner != 0) invalid(kWhere, "numel is not a multiple of inner");
  bsearch(stream, p.numel, p.inner, p.n, flags, p.in, p.boundaries, p.sorter, p.out, kWhere);
}

void isin_sorted(Stream& stream, const IsIn& p) {
  constexpr const char* kWhere = "tvk::kernels::isin_sorted";
  if (p.out.dtype != DType::Bool) invalid(kWhere, "output must be bool");
  const int flags = kFlag1D | kFlagIsIn | (p.invert ? kFlagInvert : 0);
  bsearch(stream, p.numel, 1, p.n, flags, p.in, p.sorted_test, Operand{}, p.out, kWhere);
}

void histc(Stream& stream, const Histc& p) {
  constexpr const char* kWhere = "tvk::kernels::histc";
  if (p.numel < 0 || p.bins < 1) invalid(kWhere, "bad sizes");
  if (p.numel == 0) return;
  if (p.numel > kMaxIndex || p.bins > kMaxIndex)
    invalid(kWhere, "more elements than the kernel's 32-bit index range");
  check_addr(kWhere, p.in, "input");
  check_addr(kWhere, p.counts, "counts");
  if (p.counts.dtype != DType::Int32) invalid(kWhere, "counts must be int32");
  const ComputeKind kind = kind_of(p.in.dtype);
  if (p.in.dtype == DType::Bool) invalid(kWhere, "input must not be bool");
  check_f64(stream, kind);
  HistcPush push{};
  push.in_addr = p.in.address;
  push.counts_addr = p.counts.address;
  if (kind == ComputeKind::Int64) {
    if (!(p.left_int < p.right_int)) invalid(kWhere, "left must be below right");
    std::memcpy(&push.left_bits, &p.left_int, 8);
    std::memcpy(&push.right_bits, &p.right_int, 8);
  } else if (!(p.left < p.right)) {
    invalid(kWhere, "left must be below right");
  } else if (kind == ComputeKind::Float64) {
    std::memcpy(&push.left_bits, &p.left, 8);
    std::memcpy(&push.right_bits, &p.right, 8);
  } else {
    const float l = static_cast<float>(p.left), r = static_cast<float>(p.right);
    uint32_t lb, rb;
    std::memcpy(&lb, &l, 4);
    std::memcpy(&rb, &r, 4);
    push.left_bits = lb;
    push.right_bits = rb;
  }
  push.numel = static_cast<int32_t>(p.numel);
  push.bins = static_cast<int32_t>(p.bins);
  push.in_dtype = static_cast<int32_t>(p.in.dtype);
  push.use_shared = p.bins <= kHistSharedBins ? 1 : 0;
  dispatch(stream, std::string("search.histc.") + compute_kind_name(kind), p.numel, &push,
           sizeof(push), kWhere);
}

}  // namespace tvk::kernels
