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
//   _ReplayInputs(inputs, own_buffers)
//                          the captured graph's inputs; prepare(args) checks a call's
//                          arguments against them and refreshes the graph's own input buffers
//                          in one C++ loop (see ReplayInputs).
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <ATen/ATen.h>
#include <c10/core/StorageImpl.h>

#include <cstdint>
#include <optional>
#include <vector>

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

// What a replay needs of a call's arguments, fixed at capture. Per input: the address, sizes
// and strides the captured commands use, and, for an input the graph reads from a buffer of
// its own, that buffer. prepare(args) returns false (the caller captures again) when an argument
// is not a tensor, has other sizes or strides, or, for an input read in place, moved; otherwise
// it copies each own-buffer input from its argument (recorded on the current stream, ahead of
// the replay) and returns true. The copies made before a mismatch is found are harmless: those
// buffers belong to the graph that is then dropped.
class ReplayInputs {
 public:
  ReplayInputs(const std::vector<at::Tensor>& inputs,
               const std::vector<std::optional<at::Tensor>>& own_buffers) {
    TORCH_CHECK_VALUE(inputs.size() == own_buffers.size(),
                      "_ReplayInputs: one own buffer (or None) per input");
    entries_.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      entries_.push_back({inputs[i].const_data_ptr(), inputs[i].sizes().vec(),
                          inputs[i].strides().vec(), own_buffers[i]});
  }

  bool prepare(const py::tuple& args) const {
    if (args.size() != entries_.size()) return false;
    for (size_t i = 0; i < entries_.size(); ++i) {
      PyObject* obj = PyTuple_GET_ITEM(args.ptr(), static_cast<Py_ssize_t>(i));
      if (!THPVariable_Check(obj)) return false;
      const at::Tensor& arg = THPVariable_Unpack(obj);
      const Entry& e = entries_[i];
      if (arg.sizes() != c10::IntArrayRef(e.sizes) || arg.strides() != c10::IntArrayRef(e.strides))
        return false;
      if (!e.own_buffer) {
        if (arg.const_data_ptr() != e.address) return false;
      } else if (arg.const_data_ptr() != e.address) {
        const at::NoGradGuard no_grad;
        e.own_buffer->copy_(arg);
      }
    }
    return true;
  }

 private:
  struct Entry {
    const void* address;
    std::vector<int64_t> sizes;
    std::vector<int64_t> strides;
    std::optional<at::Tensor> own_buffer;
  };
  std::vector<Entry> entries_;
};

}  // namespace

void register_replay_bindings(py::module_& m) {
  m.def("_alias_output", &alias_output, py::arg("tensor"));
  m.def("_is_alias_output", &is_alias_output, py::arg("tensor"));
  m.def("_detach_storage", &detach_storage, py::arg("storage_cdata"));
  py::class_<ReplayInputs>(m, "_ReplayInputs")
      .def(py::init<const std::vector<at::Tensor>&, const std::vector<std::optional<at::Tensor>>&>(),
           py::arg("inputs"), py::arg("own_buffers"))
      .def("prepare", &ReplayInputs::prepare, py::arg("args"),
           "True when `args` (a tuple) can be replayed; copies own-buffer inputs first.");
}

}  // namespace tvk::aten
