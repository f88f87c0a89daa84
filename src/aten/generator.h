// The vk random-number generator: counter-based (Philox-style) state = (seed, offset), like
// CUDA's. A random kernel asks for philox_engine_inputs(n), where n is an upper bound of the
// counter values one thread consumes; the generator returns (seed, offset) for that launch
// and advances its offset, so consecutive launches draw disjoint streams.
//
//   auto* gen = at::get_generator_or_default<tvk::aten::VkGeneratorImpl>(
//       generator, tvk::aten::default_generator(self.device().index()));
//   uint64_t seed, offset;
//   { std::lock_guard<std::mutex> lock(gen->mutex_);
//     std::tie(seed, offset) = gen->philox_engine_inputs(counters_per_thread); }
//
// get_state()/set_state() use a 16-byte CPU ByteTensor: seed (u64) then offset (u64), both
// little-endian (the same layout as CUDA's generator state).
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <cstdint>
#include <utility>

namespace tvk::aten {

class VkGeneratorImpl : public c10::GeneratorImpl {
 public:
  explicit VkGeneratorImpl(c10::DeviceIndex device_index = -1,
                           uint64_t seed = c10::default_rng_seed_val);
  ~VkGeneratorImpl() override = default;

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // Returns (seed, offset) for one kernel launch and advances the offset by `increment`
  // rounded up to a multiple of 4. Callers hold mutex_.
  std::pair<uint64_t, uint64_t> philox_engine_inputs(uint64_t increment);

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }
  static constexpr size_t kStateBytes = 16;

 private:
  VkGeneratorImpl* clone_impl() const override;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// Default generator of a device (-1: current device), created and seeded with
// c10::default_rng_seed_val on first use.
const at::Generator& default_generator(c10::DeviceIndex device_index = -1);
// A fresh generator (torch.Generator(device="vk")).
at::Generator new_generator(c10::DeviceIndex device_index = -1);

}  // namespace tvk::aten
