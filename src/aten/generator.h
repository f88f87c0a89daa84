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

namespace tvk {
class CapturedGraph;
class Stream;
}  // namespace tvk

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

// ---------------------------------------------------------------- captured graphs
// Random ops captured in a graph (CapturedGraph, src/runtime/graph.h) draw through the graph's
// Philox block, so that replays draw new numbers, the ones an eager run would draw at the
// generator state of the replay. Only the device's default generator takes part: a capture
// that draws from another generator, or whose generator is reseeded mid-capture, is marked
// invalid (it then runs op by op).

struct GraphPhilox {
  uint64_t address = 0;          // the Philox block, or 0 (the graph was marked invalid)
  uint64_t relative_offset = 0;  // the launch's offset from the capture's first draw
};
// For a launch that `gen` (whose mutex the caller holds) just reserved (seed, offset) for while
// the stream of `device_index` captures `graph`.
GraphPhilox graph_philox(tvk::CapturedGraph& graph, VkGeneratorImpl& gen,
                         c10::DeviceIndex device_index, uint64_t seed, uint64_t offset);
// Replays `graph` on `stream` (CapturedGraph::replay); a graph that draws random numbers first
// takes the counters its capture drew from the default generator of the stream's device.
void replay_graph(tvk::CapturedGraph& graph, tvk::Stream& stream);

// Default generator of a device (-1: current device), created and seeded with
// c10::default_rng_seed_val on first use.
const at::Generator& default_generator(c10::DeviceIndex device_index = -1);
// A fresh generator (torch.Generator(device="vk")).
at::Generator new_generator(c10::DeviceIndex device_index = -1);

}  // namespace tvk::aten
