// torch_vk._C helpers for replayed compiled graphs (torch_vk/compiler/replay.py):
//
//   _Replayer(graph, inputs, own_buffers, outputs)
//                          a replayed graph's steady-state call in one C++ call (see Replayer).
//   _is_alias_output(t)    whether t's storage is an alias a replayer handed out (its address
//                          is a graph pool block, fixed across replays of the graph that
//                          produced it)
//
// Outputs are handed out as aliases: tensors over the pool block through a storage that does
// not own it (alias_output). Before the next replay overwrites the block, every alias still
// alive gets its own copy of the memory (detach_storage); its views follow, since they
// share the StorageImpl. The copy is recorded on the current stream, ahead of the replay.
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <ATen/ATen.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "aten/generator.h"
#include "aten/vk_backend.h"
#include "aten/vk_common.h"
#include "runtime/graph.h"
#include "runtime/stream.h"

namespace py = pybind11;

namespace tvk::aten {
namespace {

void keep_memory(void*) {}

at::Tensor alias_output(const at::Tensor& t) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1,
              "alias_output: expected a vk tensor, got ", t.device());
  const c10::Storage& storage = t.storage();
  c10::DataPtr ptr(storage.mutable_data(), nullptr, &keep_memory, storage.device());
  c10::Storage alias(c10::Storage::use_byte_size_t(), storage.nbytes(), std::move(ptr),
                     /*allocator=*/nullptr, /*resizable=*/false);
  // Built directly (not at::empty + set_): a replay of a training graph hands out a hundred or
  // more saved activations, and two dispatcher round trips per output were most of its cost.
  at::Tensor out =
      at::detail::make_tensor<c10::TensorImpl>(std::move(alias), t.key_set(), t.dtype());
  out.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return out;
}

bool is_alias_output(const at::Tensor& t) {
  return t.has_storage() && t.storage().data_ptr().get_deleter() == &keep_memory;
}

// Gives `impl` a fresh copy of its memory, the copy recorded on `stream` (the graph's stream,
// which orders it before any reuse of the pool block).
void detach_storage(c10::StorageImpl* impl, tvk::Stream& stream) {
  TORCH_CHECK(impl != nullptr, "detach_storage: null storage");
  const size_t bytes = impl->nbytes();
  c10::DataPtr fresh = device_allocator()->allocate(bytes);
  if (bytes > 0) {
    const c10::DeviceGuard guard(impl->device());
    const auto src = reinterpret_cast<uint64_t>(impl->data());
    const auto dst = reinterpret_cast<uint64_t>(fresh.get());
    translate_errors([&] { stream.copy(src, dst, bytes); });
  }
  impl->set_data_ptr_noswap(std::move(fresh));
}


// A replayed graph's steady-state call (torch_vk/compiler/replay.py), fixed at capture:
//   inputs   per graph input: the address, sizes and strides the captured commands use, and,
//            for an input the graph reads from a buffer of its own, that buffer;
//   outputs  per graph output: (0, value) handed out as is, (1, i) the caller's argument i,
//            (2, tensor) a tensor of the graph's pool, handed out as an alias (alias_output).
// call(args) returns kRunNormally when the current stream is not the capture stream, and
// kCaptureAgain when an argument is not a tensor, has other sizes or strides, or (read in
// place) moved. Otherwise it copies each own-buffer input from its argument, gives every alias
// handed out by the previous call that is still alive its own memory (detach_storage), records
// the graph's commands, and returns the outputs as a list. Aliases still alive when the replayer
// is destroyed get their own memory too. Copies made before a mismatch is
// found are harmless: those buffers belong to the graph that is then dropped. Everything is
// recorded on the current stream; nothing waits.
class Replayer {
 public:
  static constexpr int kRunNormally = 1;
  static constexpr int kCaptureAgain = 2;

  Replayer(py::object graph, const std::vector<at::Tensor>& inputs,
           const std::vector<std::optional<at::Tensor>>& own_buffers, const py::list& outputs)
      : graph_object_(std::move(graph)), graph_(&graph_object_.cast<tvk::CapturedGraph&>()) {
    TORCH_CHECK_VALUE(inputs.size() == own_buffers.size(),
                      "_Replayer: one own buffer (or None) per input");
    inputs_.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      inputs_.push_back({inputs[i].const_data_ptr(), inputs[i].sizes().vec(),
                         inputs[i].strides().vec(), own_buffers[i]});
    for (const py::handle item : outputs) {
      auto entry = item.cast<py::tuple>();
      const int kind = entry[0].cast<int>();
      TORCH_CHECK_VALUE(kind >= 0 && kind <= 2, "_Replayer: unknown output kind ", kind);
      Output out{kind, py::reinterpret_borrow<py::object>(entry[1]), 0, {}};
      if (kind == 1) out.input_index = entry[1].cast<int64_t>();
      if (kind == 2) out.pool_tensor = entry[1].cast<at::Tensor>();
      outputs_.push_back(std::move(out));
    }
  }

  // Aliases still alive outlive the graph's pool (a compiled function dropped, Dynamo's cache
  // reset): they get their own memory first. Errors cannot leave a destructor; the device
  // reports them at the next synchronization.
  ~Replayer() {
    try {
      detach_handed_out();
    } catch (...) {
    }
  }
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

  py::object call(const py::tuple& args) {
    tvk::Stream& stream = current_stream();
    if (&stream != graph_->stream()) return py::int_(kRunNormally);
    if (!prepare_inputs(args)) return py::int_(kCaptureAgain);
    detach_handed_out();
    translate_errors([&] { tvk::aten::replay_graph(*graph_, stream); });
    return hand_out(args);
  }

  // The outputs for `args`, recording the aliases handed out (the capture call uses it too).
  py::list hand_out(const py::tuple& args) {
    py::list result(outputs_.size());
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const Output& out = outputs_[k];
      if (out.kind == 0) {
        result[k] = out.value;
      } else if (out.kind == 1) {
        result[k] = args[static_cast<size_t>(out.input_index)];
      } else {
        at::Tensor alias = alias_output(out.pool_tensor);
        handed_out_.push_back(alias.storage().getWeakStorageImpl());
        result[k] = py::reinterpret_steal<py::object>(THPVariable_Wrap(std::move(alias)));
      }
    }
    return result;
  }

  // Aliases of the previous call still alive get their own memory (before the pool changes).
  void detach_handed_out() {
    for (auto& weak : handed_out_)
      if (auto storage = weak.lock()) detach_storage(storage.get(), *graph_->stream());
    handed_out_.clear();
  }

 private:
  bool prepare_inputs(const py::tuple& args) const {
    if (args.size() != inputs_.size()) return false;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      PyObject* obj = PyTuple_GET_ITEM(args.ptr(), static_cast<Py_ssize_t>(i));
      if (!THPVariable_Check(obj)) return false;
      const at::Tensor& arg = THPVariable_Unpack(obj);
      const Input& in = inputs_[i];
      if (arg.sizes() != c10::IntArrayRef(in.sizes) || arg.strides() != c10::IntArrayRef(in.strides))
        return false;
      if (!in.own_buffer) {
        if (arg.const_data_ptr() != in.address) return false;
      } else if (arg.const_data_ptr() != in.address) {
        const at::NoGradGuard no_grad;
        in.own_buffer->copy_(arg);
      }
    }
    return true;
  }

  struct Input {
    const void* address;
    std::vector<int64_t> sizes;
    std::vector<int64_t> strides;
    std::optional<at::Tensor> own_buffer;
  };
  struct Output {
    int kind;
    py::object value;
    int64_t input_index;
    at::Tensor pool_tensor;
  };
  py::object graph_object_;          // keeps the CapturedGraph alive
  tvk::CapturedGraph* graph_;
  std::vector<Input> inputs_;
  std::vector<Output> outputs_;
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> handed_out_;
};

}  // namespace

void register_replay_bindings(py::module_& m) {
  m.def("_is_alias_output", &is_alias_output, py::arg("tensor"));
  py::class_<Replayer>(m, "_Replayer")
      .def(py::init<py::object, const std::vector<at::Tensor>&,
                    const std::vector<std::optional<at::Tensor>>&, const py::list&>(),
           py::arg("graph"), py::arg("inputs"), py::arg("own_buffers"), py::arg("outputs"))
      .def("__call__", &Replayer::call, py::arg("args"),
           "Replays for `args` (a tuple): the outputs (a list), or 1 (run normally: not the "
           "capture stream) or 2 (capture again: the arguments do not match).")
      .def("hand_out", &Replayer::hand_out, py::arg("args"))
      .def("detach_handed_out", &Replayer::detach_handed_out)
      .def_property_readonly_static("RUN_NORMALLY", [](py::object) { return Replayer::kRunNormally; })
      .def_property_readonly_static("CAPTURE_AGAIN", [](py::object) { return Replayer::kCaptureAgain; });
}

}  // namespace tvk::aten
