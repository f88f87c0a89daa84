// torch_vk._C bindings of the run-time generated kernels (src/kernels/generated.h), for the
// torch.compile code generator (torch_vk/compiler/):
//   _compile_kernel(source: str, name: str) -> int          kernel id (compiled or cached)
//   _launch_kernel(kernel_id, tensors, ints, floats, groups, local_size, texels=()) -> None
//       texels: (tensor, "r32f" | "rgba32f") pairs bound as storage texel buffers 0, 1, ...;
//       the index of each one's first texel is appended to ints (kernels::launch_generated)
//   _register_gemm_epilogue(glsl, name) -> int                epilogue id (src/kernels/gemm.h)
//   _launch_gemm_epilogue(epilogue_id, mat1, mat2, bias, beta, alpha, out_dtype, tensors, floats)
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

#include <cstring>
#include <limits>
#include <optional>
#include <vector>
#include <stdexcept>
#include <string>

#include "aten/vk_common.h"
#include "kernels/gemm.h"
#include "kernels/generated.h"
#include "runtime/stream.h"

namespace py = pybind11;

namespace tvk::aten {
namespace {

using tvk::AccessSet;

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

// Buffer device addresses of `tensors` (element 0, storage offset applied, like operand()):
// each must be a vk tensor on the current device. `what` names the caller in errors.
// The address of every tensor's first element. With `accesses`, each tensor's whole storage is
// added to it as read and written: a generated kernel's signature does not say which of its
// tensors it writes, and it may reach any element of their storage (hazard tracking).
c10::SmallVector<uint64_t, 16> tensor_addresses(py::handle tensors, const char* what,
                                                AccessSet* accesses = nullptr) {
  const c10::DeviceIndex device = current_device_index();
  c10::SmallVector<uint64_t, 16> addresses;
  py::object seq = fast_sequence(tensors, (std::string(what) + ": tensors must be a list of tensors").c_str());
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  addresses.reserve(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!THPVariable_Check(items[i]))
      value_error(std::string(what) + ": tensors[" + std::to_string(i) + "] is not a Tensor (got " +
                  type_name(items[i]) + ")");
    const at::Tensor& t = THPVariable_Unpack(items[i]);
    if (!t.defined() || t.device().type() != c10::DeviceType::PrivateUse1 ||
        t.device().index() != device)
      value_error(std::string(what) + ": tensors[" + std::to_string(i) + "] is " +
                  (t.defined() ? "on device " + t.device().str() : std::string("undefined")) +
                  ", expected a vk tensor on the current device vk:" + std::to_string(device));
    const void* base = t.storage().data();
    addresses.push_back(base == nullptr ? 0
                                        : reinterpret_cast<uint64_t>(base) +
                                              static_cast<uint64_t>(t.storage_offset()) * t.element_size());
    if (accesses && base != nullptr) {
      const uint64_t address = reinterpret_cast<uint64_t>(base);
      const uint64_t bytes = t.storage().nbytes();
      accesses->read(address, bytes).write(address, bytes);
    }
  }
  return addresses;
}

c10::SmallVector<float, 16> float_arguments(py::handle floats, const char* what) {
  c10::SmallVector<float, 16> values;
  py::object seq = fast_sequence(floats, (std::string(what) + ": floats must be a list of floats").c_str());
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  values.reserve(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const double v = PyFloat_AsDouble(items[i]);  // floats and ints
    if (v == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      value_error(std::string(what) + ": floats[" + std::to_string(i) + "] is not a float (got " +
                  type_name(items[i]) + ")");
    }
    values.push_back(static_cast<float>(v));
  }
  return values;
}

void launch_kernel(int64_t kernel_id, py::handle tensors, py::handle ints, py::handle floats,
                   int64_t groups, int64_t local_size, py::handle texels) {
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

  AccessSet accesses;
  const c10::SmallVector<uint64_t, 16> addresses =
      tensor_addresses(tensors, "_launch_kernel", &accesses);
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
  const c10::SmallVector<float, 16> float_values = float_arguments(floats, "_launch_kernel");
  c10::SmallVector<kernels::TexelArgument, 4> texel_args;
  if (!texels.is_none()) {
    py::object seq = fast_sequence(texels, "_launch_kernel: texels must be a list of (tensor, format)");
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
    py::list texel_tensors;
    std::vector<std::string> formats;
    for (Py_ssize_t i = 0; i < n; ++i) {
      py::tuple pair;
      try {
        pair = py::reinterpret_borrow<py::object>(items[i]).cast<py::tuple>();
      } catch (const py::cast_error&) {
      }
      if (pair.size() != 2 || !py::isinstance<py::str>(pair[1]))
        value_error("_launch_kernel: texels[" + std::to_string(i) + "] is not a (tensor, format) pair");
      texel_tensors.append(pair[0]);
      formats.push_back(pair[1].cast<std::string>());
    }
    const c10::SmallVector<uint64_t, 16> texel_addresses =
        tensor_addresses(texel_tensors, "_launch_kernel", &accesses);
    for (size_t i = 0; i < formats.size(); ++i) {
      if (formats[i] != "r32f" && formats[i] != "rgba32f")
        value_error("_launch_kernel: texel format must be 'r32f' or 'rgba32f', got '" + formats[i] + "'");
      texel_args.push_back({texel_addresses[i], formats[i] == "r32f" ? TexelFormat::R32Float
                                                                     : TexelFormat::RGBA32Float});
    }
  }
  translate_errors([&] {
    try {
      kernels::launch_generated(current_stream(), *kernel, static_cast<uint32_t>(groups),
                                static_cast<uint32_t>(local_size), addresses.data(),
                                static_cast<int>(addresses.size()), int_values.data(),
                                static_cast<int>(int_values.size()), float_values.data(),
                                static_cast<int>(float_values.size()), texel_args.data(),
                                static_cast<int>(texel_args.size()), &accesses);
    } catch (const std::invalid_argument& e) {
      value_error(e.what());
    }
  });
}


int64_t register_gemm_epilogue(const std::string& glsl, const std::string& name) {
  return kernels::register_gemm_epilogue(glsl, name);
}

// alpha * mat1 @ mat2 + beta * bias with the product's elements handed to epilogue
// `epilogue_id`, whose argument block is the addresses of `tensors` followed by `floats`
// (float32 each). mat1: m x k, mat2: k x n (any strides), bias: None or an m x n view
// (broadcast strides allowed), all of one float dtype; out_dtype: the product's dtype.
// The caller guarantees that no epilogue output overlaps mat1, mat2 or bias.
void launch_gemm_epilogue(int64_t epilogue_id, const at::Tensor& mat1, const at::Tensor& mat2,
                          const std::optional<at::Tensor>& bias, double beta, double alpha,
                          at::ScalarType out_dtype, py::handle tensors, py::handle floats) {
  const char* what = "_launch_gemm_epilogue";
  if (mat1.dim() != 2 || mat2.dim() != 2 || mat1.size(1) != mat2.size(0))
    value_error(std::string(what) + ": expected mat1 (m x k) and mat2 (k x n), got " +
                c10::str(mat1.sizes()) + " and " + c10::str(mat2.sizes()));
  const int64_t m = mat1.size(0), n = mat2.size(1);
  if (bias && (bias->dim() != 2 || bias->size(0) != m || bias->size(1) != n))
    value_error(std::string(what) + ": bias must be an m x n view");
  for (const at::Tensor* t : {&mat1, &mat2})
    if (!at::isFloatingType(t->scalar_type()) || t->scalar_type() == at::kDouble)
      value_error(std::string(what) + ": operands must be float32, float16 or bfloat16");
  // The epilogue's tensors: their whole storage read and written (hazard tracking).
  AccessSet accesses;
  const c10::SmallVector<uint64_t, 16> addresses = tensor_addresses(tensors, what, &accesses);
  const c10::SmallVector<float, 16> float_values = float_arguments(floats, what);
  std::vector<uint8_t> block(8 * addresses.size() + 4 * float_values.size());
  if (!addresses.empty()) std::memcpy(block.data(), addresses.data(), 8 * addresses.size());
  if (!float_values.empty())
    std::memcpy(block.data() + 8 * addresses.size(), float_values.data(), 4 * float_values.size());
  translate_errors([&] {
    kernels::Gemm g;
    g.kind = kernels::ComputeKind::Float32;
    g.m = m;
    g.n = n;
    g.k = mat1.size(1);
    g.alpha = kernels::GemmScalar{alpha, 0};
    g.beta = kernels::GemmScalar{beta, 0};
    g.c = kernels::GemmMatrix{0, vk_dtype(out_dtype, what), 0, 0, 0};
    if (g.k > 0) {
      const kernels::Operand a = operand(mat1, what), b = operand(mat2, what);
      g.a = kernels::GemmMatrix{a.address, a.dtype, mat1.stride(0), mat1.stride(1), 0};
      g.b = kernels::GemmMatrix{b.address, b.dtype, mat2.stride(0), mat2.stride(1), 0};
    }
    if (bias && bias->numel() > 0) {
      const kernels::Operand c = operand(*bias, what);
      g.bias = kernels::GemmMatrix{c.address, c.dtype, bias->stride(0), bias->stride(1), 0};
    }
    kernels::GemmEpilogueCall call{epilogue_id, block.data(), block.size(), &accesses};
    try {
      kernels::gemm(current_stream(), g, call);
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
        py::arg("texels") = py::none(),
        "Records one dispatch of a generated kernel on the current stream (never waits).");
  m.def("_register_gemm_epilogue", &register_gemm_epilogue, py::arg("glsl"), py::arg("name"),
        "Registers a GEMM epilogue (src/kernels/gemm.h); returns its id.");
  m.def("_launch_gemm_epilogue", &launch_gemm_epilogue, py::arg("epilogue_id"), py::arg("mat1"),
        py::arg("mat2"), py::arg("bias"), py::arg("beta"), py::arg("alpha"), py::arg("out_dtype"),
        py::arg("tensors"), py::arg("floats"),
        "Records alpha * mat1 @ mat2 + beta * bias with a GEMM epilogue (one dispatch).");
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
