// torch_vk._C helpers for replayed compiled graphs (torch_vk/compiler/replay.py):
//
//   _alias_output(t)       a tensor over t's memory through a storage that does not own it:
//                          what a replayed graph hands out, while the graph keeps its pool block
//   _is_alias_output(t)    whether t's storage is such an alias (its address is a graph pool
//                          block, fixed across replays of the graph that produced it)
//   _detach_storage(cdata) gives a still-alive alias storage (StorageImpl*, as in
//                          StorageWeakRef.cdata) its own copy of the memory before the next
//                          replay overwrites the pool block; every view of it follows, since
//                          they share the StorageImpl. The copy is recorded on the current
//                          stream, ahead of the replay.
#include <torch/csrc/utils/pybind.h>

#include <ATen/ATen.h>
#include <c10/core/StorageImpl.h>

#include <cstdint>

#include "aten/vk_backend.h"
#include "aten/vk_common.h"
#include "runtime/stream.h"

namespace py = pybind11;

namespace tvk::aten {
namespace {

void keep_memory(void*) {}

at::Tensor alias_output(const at::Tensor& t) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1,
              "_alias_output: expected a vk tensor, got ", t.device());
  const c10::Storage& storage = t.storage();
  c10::DataPtr ptr(storage.mutable_data(), nullptr, &keep_memory, storage.device());
  c10::Storage alias(c10::Storage::use_byte_size_t(), storage.nbytes(), std::move(ptr),
                     /*allocator=*/nullptr, /*resizable=*/false);
  at::Tensor out = at::empty({0}, t.options());
  out.set_(alias, t.storage_offset(), t.sizes(), t.strides());
  return out;
}

bool is_alias_output(const at::Tensor& t) {
  return t.has_storage() && t.storage().data_ptr().get_deleter() == &keep_memory;
}

void detach_storage(int64_t cdata) {
  auto* impl = reinterpret_cast<c10::StorageImpl*>(cdata);
  TORCH_CHECK(impl != nullptr, "_detach_storage: null storage");
  const size_t bytes = impl->nbytes();
  c10::DataPtr fresh = device_allocator()->allocate(bytes);
  if (bytes > 0) {
    const c10::DeviceGuard guard(impl->device());
    tvk::Stream& stream = current_stream(impl->device().index());
    const auto src = reinterpret_cast<uint64_t>(impl->data());
    const auto dst = reinterpret_cast<uint64_t>(fresh.get());
    translate_errors([&] { stream.copy(src, dst, bytes); });
  }
  impl->set_data_ptr_noswap(std::move(fresh));
}

}  // namespace

void register_replay_bindings(py::module_& m) {
  m.def("_alias_output", &alias_output, py::arg("tensor"));
  m.def("_is_alias_output", &is_alias_output, py::arg("tensor"));
  m.def("_detach_storage", &detach_storage, py::arg("storage_cdata"));
}

}  // namespace tvk::aten
