// torch_vk._C bindings of the c10d backend (torch_vk/distributed/). The class needs torch's
// c10d Python types (torch._C._distributed_c10d.Backend), so it is defined on first use by
// torch_vk._C._distributed_init(), never at import:
//
//   torch_vk._C._distributed_init()
//   backend = torch_vk._C.ProcessGroupVK(gloo_backend)   # a ProcessGroupGloo made in Python
//   backend.inner                # the Gloo backend
//   backend.pending()            # collectives issued and not completed
//   backend.stats()              # {"direct", "inline", "queued", "zero_copy_tensors", ...}
#include <torch/csrc/utils/pybind.h>

#include "process_group_vk.h"

namespace py = pybind11;

namespace tvk::aten {

void register_distributed_bindings(py::module_& m) {
  m.def("_distributed_init", [m]() mutable {
    if (py::hasattr(m, "ProcessGroupVK")) return;
    using tvk::distributed::ProcessGroupVK;
    py::module_::import("torch.distributed");  // registers c10d's Python types
    py::class_<ProcessGroupVK, c10d::Backend, c10::intrusive_ptr<ProcessGroupVK>>(
        m, "ProcessGroupVK",
        "c10d backend 'vkgloo': vk and cpu tensors over an inner Gloo backend")
        .def(py::init([](const c10::intrusive_ptr<c10d::Backend>& inner) {
               TORCH_CHECK(inner, "ProcessGroupVK needs an inner backend");
               return c10::make_intrusive<ProcessGroupVK>(inner);
             }),
             py::arg("inner"))
        .def_property_readonly("inner", &ProcessGroupVK::inner)
        // split_group deep-copies `backend.options` to pass them back to splitGroup, and Gloo's
        // options cannot be copied from Python: None makes splitGroup clone the parent
        // backend's own (Gloo) options in C++ instead.
        .def_property_readonly("options", [](ProcessGroupVK&) { return py::none(); })
        .def("pending", &ProcessGroupVK::pending)
        .def("stats", &ProcessGroupVK::stats)
        // distributed_c10d calls this on the split source for ranks outside a new group when
        // the default group has a bound device (NCCL's communicator split); nothing to do here.
        .def("perform_nocolor_split", [](ProcessGroupVK&, const at::Device&) {});
  });
}

}  // namespace tvk::aten
