// ringfeed._ringfeed: the bindings under the Python package (python/ringfeed/). Thin: each binding
// calls the library (pipeline/epoch_loader.h, io/dataset.h, io/dataset_writer.h) and converts
// values; the epoch protocol, the state dicts and their checks are the library's too. This file
// holds the module, the exceptions and the datasets; the parts are in files of their own:
//
//   _Dataset     an opened dataset (rf::Dataset): the header's fields (here)
//   _Loader      the loader of every kind of batch (loaders.h)
//   Tensor       a batch's samples, labels or views, exported through DLPack (tensor.h)
//   _DatasetWriter  rf::DatasetWriter (writer.h)
//   DataError, UsageError   the exceptions a Status becomes (RaiseStatus, the one place)
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/resized_crop.h"
#include "core/status.h"
#include "cuda/device.h"
#include "io/dataset.h"
#include "io/format.h"
#include "io/remote/remote_object.h"
#include "pipeline/output/batch_decode.h"
#include "python/src/loaders.h"
#include "python/src/status_error.h"
#include "python/src/tensor.h"
#include "python/src/writer.h"

// The project's version (the top CMakeLists.txt's project()), which python/CMakeLists.txt defines
// for the extension: ringfeed.__version__ and the wheel's metadata come from that one place.
#ifndef RINGFEED_VERSION
#error "RINGFEED_VERSION is not defined (python/CMakeLists.txt defines it: the project's version)"
#endif

namespace py = pybind11;

namespace rf::python {
namespace {

// --- Errors ----------------------------------------------------------------------------------

PyObject* g_data_error = nullptr;   // ringfeed.DataError(ValueError)
PyObject* g_usage_error = nullptr;  // ringfeed.UsageError(ValueError)

py::object OptionalInt(std::optional<uint64_t> v) {
  return v ? py::object(py::int_(*v)) : py::object(py::none());
}

// Sets the Python error for `s`: the one place a Status becomes an exception.
//   kCorruption          DataError: bad data (a checksum mismatch, a damaged header or index)
//   kUsage, kUnsupported UsageError: options that cannot be run (here, or on this machine/build)
//   kInvalidArgument     UsageError too: a value the caller handed over that is wrong (a
//                        directory whose datasets differ, a name two datasets share, samples of
//                        another size); Python's refusals are DataError, UsageError or OSError
//   kNotFound, kIOError  OSError, made from errno so it is FileNotFoundError, PermissionError, ...
//   kAborted, others     RuntimeError
// DataError and OSError carry .path (OSError: .filename), .chunk and .offset (None where the
// Status has none); the message is Status::ToString(), which names all three.
void RaiseStatus(const Status& s, bool buffer) {
  const std::string text = s.ToString();
  if (buffer) {
    PyErr_SetString(PyExc_BufferError, text.c_str());
    return;
  }
  py::object exc;
  switch (s.code()) {
    case Status::Code::kCorruption:
      exc = py::reinterpret_borrow<py::object>(g_data_error)(text);
      exc.attr("path") = s.path().empty() ? py::object(py::none()) : py::object(py::str(s.path()));
      break;
    case Status::Code::kNotFound:
    case Status::Code::kIOError: {
      const int err = s.err() != 0 ? s.err() : (s.IsNotFound() ? ENOENT : EIO);
      // OSError(errno, text) is the errno's own subclass.
      exc = py::reinterpret_borrow<py::object>(PyExc_OSError)(err, text);
      if (!s.path().empty()) exc.attr("filename") = py::str(s.path());
      break;
    }
    case Status::Code::kUsage:
    case Status::Code::kUnsupported:
    case Status::Code::kInvalidArgument:
      PyErr_SetString(g_usage_error, text.c_str());
      return;
    default:
      PyErr_SetString(PyExc_RuntimeError, text.c_str());
      return;
  }
  exc.attr("chunk") = OptionalInt(s.chunk());
  exc.attr("offset") = OptionalInt(s.offset());
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
}

std::vector<float> PerChannel(const std::array<float, format::kMaxChannels>& v, uint32_t c) {
  return std::vector<float>(v.begin(), v.begin() + c);
}

}  // namespace
}  // namespace rf::python

PYBIND11_MODULE(_ringfeed, m) {
  using namespace rf;          // NOLINT: the module's body is all bindings of rf's names
  using namespace rf::python;  // NOLINT

  m.doc() = "ringfeed's native layer (pipeline/loader.h). Use the `ringfeed` package instead.";
  m.attr("__version__") = RINGFEED_VERSION;

  g_data_error = PyErr_NewExceptionWithDoc(
      "ringfeed.DataError",
      "A dataset's bytes are bad: a chunk failing its checksum, a damaged header or index. A "
      "ValueError. The message names the file, the chunk and the byte offset; so do the "
      "attributes .path, .chunk and .offset (None where not known).",
      PyExc_ValueError, nullptr);
  g_usage_error = PyErr_NewExceptionWithDoc(
      "ringfeed.UsageError",
      "Options that cannot be run: a bad value, options that contradict each other, the "
      "dataset or this machine (device='cuda' without a GPU). A ValueError.",
      PyExc_ValueError, nullptr);
  if (g_data_error == nullptr || g_usage_error == nullptr) throw py::error_already_set();
  m.attr("DataError") = py::handle(g_data_error);
  m.attr("UsageError") = py::handle(g_usage_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      RaiseStatus(e.status, e.buffer);
    }
  });

  BindWriter(m);

  m.def("cuda_available", &CudaDevicePresent,
        "Whether this build has CUDA and a GPU is visible (the default device is then 'cuda').");
  m.def(
      "dtype_name",
      [](const std::string& name) -> std::optional<std::string> {
        const std::optional<DType> t = ParseDType(name);
        if (!t) return std::nullopt;
        return std::string(DTypeName(*t));
      },
      py::arg("name"), "The dtype's own name ('bf16' -> 'bfloat16'), or None for no dtype.");
  m.def("shard_base", &format::ShardBase, py::arg("path"),
        "The base name a shard file name came from ('d.rfd' for 'd-00001-of-00004.rfd'), or '' "
        "where the name is no shard name.");
  m.def("shard_path", &format::ShardPath, py::arg("base"), py::arg("index"), py::arg("count"),
        "Shard `index` of `count` of base name `base`: 'd-00001-of-00004.rfd'.");
  m.def("is_remote_path", &IsRemotePath, py::arg("path"),
        "Whether a path names a remote object: https://, http:// or s3:// (any case).");
  m.def("shown_path", &ShownPath, py::arg("path"),
        "A path as every message shows it: a remote one (https://, http://, s3://) without its "
        "userinfo and query (where credentials and presigned signatures live), a local one as "
        "it is.");
  m.def(
      "random_resized_crop",
      [](uint64_t seed, uint64_t epoch, uint64_t index, uint32_t height, uint32_t width) {
        if (height == 0 || width == 0 || height > 65535 || width > 65535)
          Throw(Status::Usage("height and width must be 1 to 65535"));
        const CropBox b = RandomResizedCropOf(seed, epoch, index, height, width);
        return py::make_tuple(b.top, b.left, b.height, b.width, b.flip);
      },
      py::arg("seed"), py::arg("epoch"), py::arg("index"), py::arg("height"), py::arg("width"),
      "The training crop decoded images take for sample `index` of `epoch` (core/resized_crop.h): "
      "(top, left, height, width, flip) of a height x width image.");
  m.def(
      "center_crop",
      [](uint32_t height, uint32_t width, uint32_t size) {
        if (height == 0 || width == 0 || size == 0)
          Throw(Status::Usage("height, width and size must be at least 1"));
        const CropBox b = CenterCropOf(height, width, size);
        return py::make_tuple(b.top, b.left, b.height, b.width, b.resized_height, b.resized_width);
      },
      py::arg("height"), py::arg("width"), py::arg("size"),
      "The evaluation crop (image_crop='center'): (top, left, height, width, resized_height, "
      "resized_width), the box in the image resized to resized_height x resized_width.");

  py::class_<Dataset, std::shared_ptr<Dataset>>(
      m, "_Dataset", "An opened, checked dataset: every shard's header and chunk index.")
      .def(py::init(&detail::OpenDataset), py::arg("path"), py::arg("options") = py::dict(),
           py::arg("datasets") = 1)
      .def_property_readonly("samples", &Dataset::sample_count)
      .def_property_readonly("shape", [](const Dataset& d) { return d.header().Shape(); })
      .def_property_readonly("dtype",
                             [](const Dataset& d) { return DTypeName(d.header().sample_dtype); })
      .def_property_readonly("is_image",
                             [](const Dataset& d) {
                               return !d.header().variable() &&
                                      IsImageDType(d.header().sample_dtype);
                             })
      .def_property_readonly(
          "record_kind",
          [](const Dataset& d) { return format::RecordKindName(d.header().record_kind); })
      .def_property_readonly("media_type", [](const Dataset& d) { return d.header().media_type; })
      .def_property_readonly(
          "fields", [](const Dataset& d) { return FieldPairs(d.header().fields); },
          "Samples of several fields: (name, type) pairs in the table's order; empty otherwise.")
      .def_property_readonly("label_dtype",
                             [](const Dataset& d) { return DTypeName(d.header().label_dtype); })
      .def_property_readonly("classes", [](const Dataset& d) { return d.header().num_classes; })
      .def_property_readonly("channels", [](const Dataset& d) { return d.header().channels; })
      .def_property_readonly(
          "mean", [](const Dataset& d) { return PerChannel(d.header().mean, d.header().channels); })
      .def_property_readonly(
          "std",
          [](const Dataset& d) { return PerChannel(d.header().stddev, d.header().channels); })
      .def_property_readonly("id", [](const Dataset& d) { return d.header().dataset_id; })
      .def_property_readonly("chunks", &Dataset::chunk_count)
      .def_property_readonly("total_bytes", &Dataset::total_bytes)
      .def_property_readonly("data_bytes", &Dataset::data_bytes)
      .def_property_readonly("compressed_chunks", &Dataset::compressed_chunks)
      .def_property_readonly("format_version", [](const Dataset& d) { return d.header().version; })
      .def_property_readonly("codec", [](const Dataset& d) { return CodecText(d.header().codec); })
      .def_property_readonly("shard_paths",
                             [](const Dataset& d) {
                               std::vector<std::string> v;
                               for (size_t i = 0; i < d.shard_count(); ++i)
                                 v.push_back(d.shard_path(i));
                               return v;
                             })
      .def_property_readonly(
          "parts",
          [](const Dataset& d) {
            std::vector<std::pair<std::string, uint64_t>> v;
            for (size_t p = 0; p < d.part_count(); ++p)
              v.emplace_back(d.part(p).path, d.part(p).sample_count);
            return v;
          },
          "A directory's datasets, in the order read, each (path, samples); one dataset: itself.");

  BindTensor(m);
  BindLoaders(m);
}
