#include "python/src/tensor.h"

#include <pybind11/stl.h>

#include "python/src/status_error.h"

namespace py = pybind11;

namespace rf::python {
namespace {

// The capsule's destructor: a capsule a consumer took is renamed "used_dltensor" and is the
// consumer's to delete; one still named "dltensor" was never consumed, so its tensor is deleted
// here (the DLPack rule). Runs with the GIL held; keeps any exception being raised.
void DeleteUnconsumedCapsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "used_dltensor")) return;
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* raised = PyErr_GetRaisedException();
#else
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
#endif
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (t != nullptr) {
    if (t->deleter != nullptr) t->deleter(t);
  } else {
    PyErr_WriteUnraisable(capsule);
  }
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(raised);
#else
  PyErr_Restore(type, value, traceback);
#endif
}

py::capsule DlpackCapsule(const Tensor& t, py::object stream, py::object /*max_version*/,
                          py::object dl_device, py::object copy) {
  DlpackRequest r;
  if (!stream.is_none()) r.stream = stream.cast<int64_t>();
  if (!dl_device.is_none()) {
    auto d = dl_device.cast<std::pair<int, int>>();
    r.dl_device = DLDevice{static_cast<DLDeviceType>(d.first), d.second};
  }
  if (!copy.is_none()) r.copy = copy.cast<bool>();
  const Status st = PrepareExport(*t.batch, r);
  if (!st.ok()) Throw(st, /*buffer=*/true);
  return NewCapsule(t);
}

}  // namespace

py::capsule NewCapsule(const Tensor& t) {
  DLManagedTensor* m = ExportBatch(t.batch, t.part, t.view);
  PyObject* capsule = PyCapsule_New(m, "dltensor", DeleteUnconsumedCapsule);
  if (capsule == nullptr) {
    m->deleter(m);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

void BindTensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor",
                     "One batch's samples or labels, in the loader's buffer (no copy). Export "
                     "it with torch.from_dlpack(t), numpy.from_dlpack(t) (host memory) or any "
                     "DLPack consumer; the buffer stays valid, unchanged, while this object or "
                     "any tensor made from it lives, even after the loader is gone.")
      .def_property_readonly(
          "shape",
          [](const Tensor& t) {
            const std::vector<int64_t> s = t.shape();
            py::tuple out(s.size());
            for (size_t i = 0; i < s.size(); ++i) out[i] = py::int_(s[i]);
            return out;
          },
          "The shape: (n, C, H, W) or (n, H, W, C) for images, (n, ...) otherwise; (n,) for "
          "labels.")
      .def_property_readonly(
          "dtype", [](const Tensor& t) { return std::string(DTypeName(t.dtype())); },
          "The element type as a string: 'float32', 'bfloat16', 'float16', 'uint8', ...; labels "
          "are 'int64'.")
      .def_property_readonly("device", &Tensor::device, "'cpu' or 'cuda:N'.")
      .def_property_readonly(
          "data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data()); },
          "The buffer's address (what torch.from_dlpack(t).data_ptr() gives).")
      .def_property_readonly(
          "nbytes",
          [](const Tensor& t) {
            size_t n = DTypeSize(t.dtype());
            for (int64_t d : t.shape()) n *= static_cast<size_t>(d);
            return n;
          },
          "Bytes of the buffer the tensor views.")
      .def_property_readonly(
          "epoch", [](const Tensor& t) { return t.batch->epoch(); }, "The batch's epoch.")
      .def_property_readonly(
          "position", [](const Tensor& t) { return t.batch->position(); },
          "Where the batch's first sample sits in its epoch's order (for this rank).")
      .def_property_readonly(
          "indices", [](const Tensor& t) { return t.batch->indices(); },
          "The dataset indices of the batch's samples, in batch order.")
      .def_property_readonly(
          "span", [](const Tensor& t) { return t.batch->span(); },
          "The samples of the epoch the batch stands for: its own, and the bad image records "
          "skipped from it (skip_bad_records); position + span is where the next batch starts.")
      .def("__dlpack__", &DlpackCapsule, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none(),
           "The array API's export: a 'dltensor' capsule (DLPack 0.6, whatever max_version asks) "
           "viewing the buffer. stream (CUDA): the consumer's stream, made to wait for the batch "
           "without a host wait: None or 1 the legacy default stream, 2 the per-thread default "
           "stream, -1 no wait, any other int a cudaStream_t; host memory takes None or -1. "
           "dl_device may only name the tensor's own device, and copy=True is refused: "
           "BufferError.")
      .def(
          "__dlpack_device__",
          [](const Tensor& t) {
            const DLDevice d = DlpackDeviceOf(*t.batch);
            return py::make_tuple(static_cast<int>(d.device_type), d.device_id);
          },
          "(2, gpu) for kDLCUDA, (1, 0) for kDLCPU.")
      .def(
          "numpy",
          [](py::object self) {
            const Tensor& t = self.cast<const Tensor&>();
            if (t.batch->on_gpu()) {
              throw py::type_error("numpy(): the tensor is on " + t.device() +
                                   "; use torch.from_dlpack (or another GPU array library)");
            }
            if (t.dtype() == DType::kBFloat16) {
              throw py::type_error("numpy(): numpy has no bfloat16; use torch.from_dlpack");
            }
            return py::module_::import("numpy").attr("from_dlpack")(self);
          },
          "A numpy array viewing the buffer (host memory only; no bfloat16 in numpy).")
      .def("__repr__", [](const Tensor& t) {
        std::string s = "ringfeed.Tensor(shape=(";
        const std::vector<int64_t> shape = t.shape();
        for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
        if (shape.size() == 1) s += ",";
        return s + "), dtype=" + std::string(DTypeName(t.dtype())) + ", device='" + t.device() +
               "')";
      });
}

}  // namespace rf::python
