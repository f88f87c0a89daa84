// vk generator: see generator.h.
#include "aten/generator.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <tuple>
#include <deque>
#include <memory>
#include <mutex>

#include "aten/vk_backend.h"
#include "aten/vk_common.h"
#include "runtime/graph.h"
#include "runtime/stream.h"

namespace tvk::aten {

namespace {
c10::DeviceIndex generator_device(c10::DeviceIndex index) {
  return index < 0 ? current_device_index() : index;
}
}  // namespace

VkGeneratorImpl::VkGeneratorImpl(c10::DeviceIndex device_index, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, generator_device(device_index)),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed) {}

void VkGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t VkGeneratorImpl::current_seed() const { return seed_; }

uint64_t VkGeneratorImpl::seed() {
  uint64_t random = c10::detail::getNonDeterministicRandom(/*is_cuda=*/true);
  set_current_seed(random);
  return random;
}

void VkGeneratorImpl::set_offset(uint64_t offset) {
  TORCH_CHECK(offset % 4 == 0, "torch-vk: the generator offset must be a multiple of 4");
  offset_ = offset;
}

uint64_t VkGeneratorImpl::get_offset() const { return offset_; }

c10::intrusive_ptr<c10::TensorImpl> VkGeneratorImpl::get_state() const {
  at::Tensor state = at::empty({static_cast<int64_t>(kStateBytes)},
                               at::TensorOptions().dtype(at::kByte).device(at::kCPU));
  auto* bytes = state.data_ptr<uint8_t>();
  std::memcpy(bytes, &seed_, sizeof(uint64_t));
  std::memcpy(bytes + sizeof(uint64_t), &offset_, sizeof(uint64_t));
  return state.getIntrusivePtr();
}

void VkGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  at::detail::check_rng_state(new_state);
  TORCH_CHECK(new_state.numel() == static_cast<int64_t>(kStateBytes),
              "torch-vk: RNG state must be a ByteTensor of ", kStateBytes, " bytes, got ",
              new_state.numel());
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  uint64_t seed = 0;
  uint64_t offset = 0;
  std::memcpy(&seed, bytes, sizeof(uint64_t));
  std::memcpy(&offset, bytes + sizeof(uint64_t), sizeof(uint64_t));
  TORCH_CHECK(offset % 4 == 0, "torch-vk: invalid RNG state (offset not a multiple of 4)");
  seed_ = seed;
  offset_ = offset;
}

std::pair<uint64_t, uint64_t> VkGeneratorImpl::philox_engine_inputs(uint64_t increment) {
  increment = ((increment + 3) / 4) * 4;
  uint64_t offset = offset_;
  offset_ += increment;
  return {seed_, offset};
}

VkGeneratorImpl* VkGeneratorImpl::clone_impl() const {
  auto* gen = new VkGeneratorImpl(device().index(), seed_);
  gen->offset_ = offset_;
  return gen;
}

// ---------------------------------------------------------------- default generators

namespace {
std::mutex g_generators_mutex;
// A deque: references handed out stay valid when more devices' generators are added. Never
// destroyed: Python wrappers borrow these generators until interpreter shutdown.
auto& g_default_generators = *new std::deque<std::unique_ptr<at::Generator>>();
}  // namespace

const at::Generator& default_generator(c10::DeviceIndex device_index) {
  c10::DeviceIndex index = checked_device_index(device_index);
  std::lock_guard<std::mutex> lock(g_generators_mutex);
  while (g_default_generators.size() <= static_cast<size_t>(index)) {
    g_default_generators.emplace_back(nullptr);
  }
  auto& slot = g_default_generators[index];
  if (!slot) {
    slot = std::make_unique<at::Generator>(
        at::make_generator<VkGeneratorImpl>(index, c10::default_rng_seed_val));
  }
  return *slot;
}

at::Generator new_generator(c10::DeviceIndex device_index) {
  c10::DeviceIndex index = checked_device_index(device_index);
  return at::make_generator<VkGeneratorImpl>(index, c10::default_rng_seed_val);
}

// ---------------------------------------------------------------- captured graphs

GraphPhilox graph_philox(tvk::CapturedGraph& graph, VkGeneratorImpl& gen,
                         c10::DeviceIndex device_index, uint64_t seed, uint64_t offset) {
  const at::Generator& def = default_generator(device_index);
  if (def.unsafeGetGeneratorImpl() != &gen) {
    graph.invalidate("a random op draws from a generator other than the device's default one");
    return {};
  }
  const bool first = !graph.draws_random();
  const uint64_t address = graph.philox_address(seed, offset);
  tvk::CapturedGraph::PhiloxCapture& p = graph.philox();
  if (!first && (p.seed != seed || offset < p.base)) {
    graph.invalidate("the generator was reseeded or rewound during the capture");
    return {};
  }
  p.consumed = gen.get_offset() - p.base;
  return {address, offset - p.base};
}

void replay_graph(tvk::CapturedGraph& graph, tvk::Stream& stream) {
  if (!graph.draws_random() || !graph.valid() || !graph.captured() || graph.stream() != &stream) {
    graph.replay(stream);  // reports what is wrong, if anything
    return;
  }
  const auto index = static_cast<c10::DeviceIndex>(stream.device().index());
  auto* gen = at::check_generator<VkGeneratorImpl>(default_generator(index));
  uint64_t seed = 0, offset = 0;
  {
    std::lock_guard<std::mutex> lock(gen->mutex_);
    std::tie(seed, offset) = gen->philox_engine_inputs(graph.philox().consumed);
  }
  graph.replay(stream, seed, offset);
}

}  // namespace tvk::aten
