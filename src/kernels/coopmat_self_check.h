// L2: the first-use self-checks of the cooperative-matrix kernels (GEMM, attention,
// convolution). No torch headers.
//
// lavapipe cannot run cooperative matrices, so their kernels are tested on it only through
// their emulation; on a real device each kernel family runs only after a self-check at its
// first use there, per element type: a small problem compared with the portable kernels. A
// failed check leaves the family on the portable kernels for the process, with one warning.
#pragma once
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"

namespace tvk {
class Device;
class Stream;
struct DeviceCapabilities;
}  // namespace tvk

namespace tvk::kernels::detail {

class CoopmatSelfChecks {
 public:
  // `family` names the kernels in the warning ("GEMM", "attention", "convolution").
  explicit CoopmatSelfChecks(const char* family) : family_(family) {}

  // Whether the family may run for `dtype` on `stream`'s device: runs `check` (which
  // synchronizes the stream; it returns false with the reason in its argument on a mismatch, or
  // throws on an error) at the first call per device and dtype, never while the stream is
  // capturing (false then, undecided). A check that runs out of device memory leaves the
  // state undecided too (false now, checked again at a later use).
  bool passed(Stream& stream, DType dtype, const std::function<bool(std::string*)>& check);
  // "passed", "failed" or "unchecked".
  const char* state(Stream& stream, DType dtype);
  // Forgets the results on `stream`'s device (tests: the next use checks again).
  void forget(Stream& stream);

 private:
  enum class State { Unchecked, Passed, Failed };
  const char* family_;
  std::mutex mutex_;
  std::map<std::pair<const Device*, DType>, State> states_;
};

// The device buffers of one check, freed when it ends (stream order keeps a later reuse after
// the commands that used them).
class CheckBuffers {
 public:
  explicit CheckBuffers(Stream& stream) : stream_(stream) {}
  ~CheckBuffers();
  CheckBuffers(const CheckBuffers&) = delete;
  CheckBuffers& operator=(const CheckBuffers&) = delete;
  uint64_t allocate(uint64_t bytes);
  Operand operand(int64_t elements, DType dtype);

 private:
  Stream& stream_;
  std::vector<uint64_t> buffers_;
};

// A family's environment switch (TORCH_VK_<FAMILY>_COOPMAT): "0" / "off", "emulate", or unset
// (anything else).
enum class CoopmatSwitch { Unset, Off, Emulate };
CoopmatSwitch coopmat_switch(const char* variable);
// Whether `variable` (TORCH_VK_<FAMILY>_COOPMAT_SELF_CHECK) asks the check to fail (tests).
bool self_check_forced_to_fail(const char* variable);
// Whether the device lists the 16 x 16 x 16 float16 (bfloat16) x -> float32 subgroup shape.
bool device_has_16x16x16(const DeviceCapabilities& caps, DType dtype);

// Host helpers of the checks' 16-bit data.
// The bits of k / 64 (|k| <= 64: exact in float16 and bfloat16) in `dtype`.
uint16_t bits_of_64ths(int k, DType dtype);
// `elements` values k / 64 (|k| <= 64, from a hash of the index and `salt`) as `dtype` bits.
std::vector<uint16_t> values_of_64ths(int64_t elements, uint32_t salt, DType dtype);
// The value of 16-bit pattern `h` of `dtype` (float16 or bfloat16).
float float_of_bits(uint16_t h, DType dtype);
// Whether |x - y| <= tolerance * max(1, |y|) for every element of two buffers of 16-bit
// `dtype` values (NaN fails).
bool close_16(const std::vector<uint16_t>& x, const std::vector<uint16_t>& y, DType dtype,
              float tolerance);

}  // namespace tvk::kernels::detail
