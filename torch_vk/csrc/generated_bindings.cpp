// torch_vk._C bindings of the run-time generated kernels (src/kernels/generated.h), for the
// torch.compile code generator (torch_vk/compiler/):
//   _compile_kernel(source: str, name: str) -> int          kernel id (compiled or cached)
//   _launch_kernel(kernel_id, tensors, ints, floats, groups, local_size) -> None
//   _generated_args_indirect(n_addresses, n_ints, n_floats) -> bool
//   _generated_kernel_stats() -> {"compiles", "memory_hits", "disk_hits"}
//   _generated_compiler_available() -> bool, _generated_compiler_version() -> str
//
// _launch_kernel is on the per-step hot path: it reads the argument sequences through the
// CPython fast-sequence API (no per-item pybind casts), keeps addresses and scalars in stack
// vectors, records on the current stream and never waits.
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <c10/util/SmallVector.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "aten/vk_common.h"
#include "kernels/generated.h"

namespace py = pybind11;

namespace tvk::aten {
namespace {

// A list/tuple as a fast sequence (new reference); TypeError naming `what` otherwise.
py::object fast_sequence(py::handle obj, const char* what) {
  PyObject* seq = PySequence_Fast(obj.ptr(), what);
  if (!seq) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(seq);
}

std::string type_name(PyObject* obj) { return Py_TYPE(obj)->tp_name; }

// Raises ValueError. (A thrown py::value_error would become a RuntimeError: the module's
// exception translator hands C++ exceptions to torch's, which maps them to RuntimeError.)
[[noreturn]] void value_error(const std::string& message) {
  PyErr_SetString(PyExc_ValueError, message.c_str());
  throw py::error_already_set();
}

int64_t compile_kernel(const std::string& source, const std::string& name) {
  try {
    py::gil_scoped_release no_gil;  // compiles take milliseconds
    return kernels::compile_generated(source, name).id;
  } catch (const std::invalid_argument& e) {  // a compile error: RuntimeError with the log
    throw std::runtime_error(e.what());
  }
}

void launch_kernel(int64_t kernel_id, py::handle tensors, py::handle ints, py::handle floats,
                   int64_t groups, int64_t local_size) {
  const kernels::GeneratedKernel* kernel = nullptr;
  try {
    kernel = &kernels::generated_kernel(kernel_id);
  } catch (const std::invalid_argument& e) {
    value_error(std::string("_launch_kernel: ") + e.what());
  }
  if (groups < 1 || groups > std::numeric_limits<uint32_t>::max())
    value_error("_launch_kernel: groups must be in 1..2^32-1, got " + std::to_string(groups));
  if (local_size < 1 || local_size > std::numeric_limits<uint32_t>::max())
    value_error("_launch_kernel: local_size must be in 1..2^32-1, got " + std::to_string(local_size));

  const c10::DeviceIndex device = current_device_index();
  c10::SmallVector<uint64_t, 16> addresses;
  {
    py::object seq = fast_sequence(tensors, "_launch_kernel: tensors must be a list of tensors");
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
    addresses.reserve(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!THPVariable_Check(items[i]))
        value_error("_launch_kernel: tensors[" + std::to_string(i) +
                              "] is not a Tensor (got " + type_name(items[i]) + ")");
      const at::Tensor& t = THPVariable_Unpack(items[i]);
      if (!t.defined() || t.device().type() != c10::DeviceType::PrivateUse1 ||
          t.device().index() != device)
        value_error("_launch_kernel: tensors[" + std::to_string(i) + "] is " +
                              (t.defined() ? "on device " + t.device().str() : std::string("undefined")) +
                              ", expected a vk tensor on the current device vk:" + std::to_string(device));
      // The buffer device address of element 0 (storage offset applied), like operand().
      const void* base = t.storage().data();
      addresses.push_back(base == nullptr ? 0
                                          : reinterpret_cast<uint64_t>(base) +
                                                static_cast<uint64_t>(t.storage_offset()) * t.element_size());
    }
  }
  c10::SmallVector<int64_t, 16> int_values;
  {
    py::object seq = fast_sequence(ints, "_launch_kernel: ints must be a list of ints");
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
    int_values.reserve(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = items[i];
      py::object index;  // numpy / other integer types: through __index__
      if (!PyLong_Check(item)) {
        index = py::reinterpret_steal<py::object>(PyNumber_Index(item));
        if (!index) PyErr_Clear();
        item = index.ptr();
      }
      int overflow = 0;
      const long long v = item ? PyLong_AsLongLongAndOverflow(item, &overflow) : -1;
      if (!item || overflow != 0 || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        value_error("_launch_kernel: ints[" + std::to_string(i) + "] is not an int64 (got " +
                              type_name(items[i]) + ")");
      }
      int_values.push_back(v);
    }
  }
  c10::SmallVector<float, 16> float_values;
  {
    py::object seq = fast_sequence(floats, "_launch_kernel: floats must be a list of floats");
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
    float_values.reserve(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      const double v = PyFloat_AsDouble(items[i]);  // floats and ints
      if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        value_error("_launch_kernel: floats[" + std::to_string(i) + "] is not a float (got " +
                              type_name(items[i]) + ")");
      }
      float_values.push_back(static_cast<float>(v));
    }
  }
  translate_errors([&] {
    try {
      kernels::launch_generated(current_stream(), *kernel, static_cast<uint32_t>(groups),
                                static_cast<uint32_t>(local_size), addresses.data(),
                                static_cast<int>(addresses.size()), int_values.data(),
                                static_cast<int>(int_values.size()), float_values.data(),
                                static_cast<int>(float_values.size()));
    } catch (const std::invalid_argument& e) {
      value_error(e.what());
    }
  });
}

}  // namespace

void register_generated_bindings(py::module_& m) {
  m.def("_compile_kernel", &compile_kernel, py::arg("source"), py::arg("name"),
        "Compiles (or finds in the memory / disk cache) a generated GLSL compute kernel; "
        "returns its id. Raises RuntimeError with the compiler log on a compile error.");
  m.def("_launch_kernel", &launch_kernel, py::arg("kernel_id"), py::arg("tensors"),
        py::arg("ints"), py::arg("floats"), py::arg("groups"), py::arg("local_size"),
        "Records one dispatch of a generated kernel on the current stream (never waits).");
  m.def("_generated_args_indirect", &kernels::generated_args_indirect, py::arg("n_addresses"),
        py::arg("n_ints"), py::arg("n_floats"),
        "True when the packed arguments exceed 128 bytes (passed through a parameter block).");
  m.def("_generated_kernel_stats", [] {
    const kernels::GeneratedKernelStats s = kernels::generated_kernel_stats();
    py::dict d;
    d["compiles"] = s.compiles;
    d["memory_hits"] = s.memory_hits;
    d["disk_hits"] = s.disk_hits;
    return d;
  });
  m.def("_generated_compiler_available", &kernels::generated_compiler_available);
  m.def("_generated_compiler_version", &kernels::generated_compiler_version);
}

}  // namespace tvk::aten
