// L2: hash_tensor's XOR reduction (shaders/hash.comp). No torch headers.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// out[o] = XOR over the reduced index space of bits64(in[o, r]): PyTorch's CPU XorSumOps
// (floating values widened to float64 and bit-cast, integers sign- / zero-extended to 64
// bits, bool as 0 / 1), so the result equals the CPU's bit for bit. `out` (dtype Int64)
// receives the uint64 bits. The geometry is a reduction's (see kernels.h: out.strides[0] =
// output element strides, out.strides[1] = input element strides of the kept dims,
// reduced.strides[1] = input element strides of the reduced dims). An empty reduced space
// gives 0. `scratch` (Int64, xor_hash_scratch() elements; unused when that is 0) holds the
// partials when few outputs with long reductions are split over several workgroups.
// Throws std::invalid_argument for bad operands, more than kMaxDims dims or offsets beyond
// the 32-bit index range.
void xor_hash(Stream& stream, int64_t out_numel, int64_t reduced_numel, const ReduceGeometry& geometry,
              Operand out, Operand in, Operand scratch);
int64_t xor_hash_scratch(int64_t out_numel, int64_t reduced_numel);

}  // namespace tvk::kernels
