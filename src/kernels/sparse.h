// L2: the sparse family (shaders/sparse.comp). No torch headers.
//
// CSR sparse @ dense: out[r, :] = sum over the nonzeros p of row r of values[p] * dense[cols[p], :].
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

struct Spmm {
  // Float32 for float16 / bfloat16 / float32 operands (loads convert, the store rounds once),
  // Float64 (devices with shaderFloat64; needed when an operand is float64).
  ComputeKind kind = ComputeKind::Float32;
  int64_t rows = 0;  // rows of the sparse matrix and of out
  int64_t k = 0;     // columns of the sparse matrix = rows of dense
  int64_t n = 0;     // columns of dense and of out
  int64_t nnz = 0;
  Operand row_ptr;   // int64 [rows + 1], non-decreasing, row_ptr[rows] == nnz
  Operand cols;      // int64 [nnz], each in [0, k)
  Operand values;    // [nnz]
  Operand dense;     // contiguous [k, n]
  Operand out;       // contiguous [rows, n], fully written
};

// Records the op on `stream`. rows == 0 or n == 0 records nothing. Throws
// std::invalid_argument for a kind other than Float32 / Float64, Float64 without
// shaderFloat64, float64 operands with the Float32 kind, index operands that are not int64,
// negative sizes, null or misaligned addresses, or more than 2^31 - 1 elements in dense / out
// or nonzeros. Column indices are trusted (validated by the caller's sparse tensor invariants).
void spmm(Stream& stream, const Spmm& problem);

}  // namespace tvk::kernels
