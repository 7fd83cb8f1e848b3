// ringfeed._ringfeed: the bindings under the Python package (python/ringfeed/). Thin: each binding
// calls the library (pipeline/loader.h, io/dataset.h) or dlpack_export.h and converts values; the
// epoch protocol and state dicts are the package's Python (python/ringfeed/loader.py), reached by
// its pytest suite. The loader's options are pipeline/plan/loader_options.h's table: their names,
// defaults, bounds and help come from there (loader_options()), and each keyword argument is
// converted by its declared type and set through the table (MakeOptions), with no option named
// here.
//
//   _Dataset     an opened dataset (rf::Dataset): the header's fields
//   _Loader      one rf::Loader over a _Dataset, or over a mixture of them (weights), and a state
//                dict's resumed epoch (and a mixture's stream): start_epoch, next, stats, options
//   Tensor       a decoded batch's samples or labels, exported through DLPack
//   _DatasetWriter  rf::DatasetWriter (writer.cc): what ringfeed.DatasetWriter writes through
//   DataError, UsageError   the exceptions a Status becomes (RaiseStatus, the one place)
//
// The GIL is released around every call that can block (opening a dataset or a loader, StartEpoch,
// Next, closing). A loader is used by one thread at a time (loader.h): each _Loader call takes the
// loader's mutex, with the GIL released while it waits, so a second Python thread blocks there
// instead of deadlocking on the GIL. Ctrl-C: the loader's poll (LoaderOptions::poll) runs Python's
// signal handlers about every 100 ms of a wait for data; a KeyboardInterrupt ends the wait and is
// raised from the call.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/resized_crop.h"
#include "core/status.h"
#include "cuda/device.h"
#include "io/dataset.h"
#include "io/format.h"
#include "options/option_table.h"
#include "pipeline/loader.h"
#include "pipeline/order/window_order.h"
#include "pipeline/output/batch_decode.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/sequences/sequence_loader.h"
#include "pipeline/sources/mixture.h"
#include "pipeline/sources/pipeline_config.h"
#include "python/src/dlpack_export.h"
#include "python/src/option_values.h"
#include "python/src/status_error.h"
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

bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// --- DLPack ----------------------------------------------------------------------------------

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

// A batch's samples or labels, as Python sees them: a small array-like that exports DLPack.
struct Tensor {
  std::shared_ptr<LoadedBatch> batch;
  BatchPart part;
  size_t view = 0;  // kView: which of batch->views()

  DType dtype() const {
    if (part == BatchPart::kView) return batch->views().at(view).dtype;
    return part == BatchPart::kSamples ? batch->dtype() : DType::kInt64;
  }
  void* data() const {
    switch (part) {
      case BatchPart::kView:
        return batch->views().at(view).data;
      case BatchPart::kSamples:
        return batch->samples();
      case BatchPart::kOffsets:
        return batch->offsets();
      case BatchPart::kLabels:
        break;
    }
    return batch->labels();
  }
  std::vector<int64_t> shape() const {
    if (part == BatchPart::kView) return batch->views().at(view).shape;
    if (part == BatchPart::kSamples) return batch->shape();
    const int64_t n = static_cast<int64_t>(batch->size());
    return {part == BatchPart::kOffsets ? n + 1 : n};
  }
  std::string device() const {
    if (!batch->on_gpu()) return "cpu";
    std::string s = "cuda:";  // appended apart: GCC 12's -Wrestrict misfires on "..." + string
    s += std::to_string(batch->gpu_device());
    return s;
  }
};

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
  DLManagedTensor* m = ExportBatch(t.batch, t.part, t.view);
  PyObject* capsule = PyCapsule_New(m, "dltensor", DeleteUnconsumedCapsule);
  if (capsule == nullptr) {
    m->deleter(m);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

// --- The loader ------------------------------------------------------------------------------

// LoaderOptions::poll: called about every 100 ms on the calling thread while StartEpoch or Next
// waits for data, with the GIL released. Runs Python's pending signal handlers; where one raised
// (Ctrl-C's KeyboardInterrupt) the wait ends, and the exception, left set, is what the binding
// raises (RaiseIfPythonError).
Status CheckSignals() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return Status::Ok();
  return Status::Aborted("interrupted by a signal");
}

// After a call the poll may have ended: the exception a signal handler raised, if any.
void RaiseIfPythonError() {
  if (PyErr_Occurred() != nullptr) throw py::error_already_set();
}

// A native loader (rf::Loader or rf::SequenceLoader, `L`) held for Python: its calls run under
// its mutex with the GIL released, and Close (or the holder's end) stops it. The datasets it
// reads are held here too, declared first, so destroyed after it.
template <typename L>
class NativeHolder {
 public:
  ~NativeHolder() {
    if (InterpreterFinalizing()) {
      loader_.reset();
      return;
    }
    Close();
  }

  // Runs f(loader) under the loader's mutex with the GIL released; Usage error once closed.
  template <typename F>
  auto Locked(F&& f) {
    py::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mu_);
    if (!loader_) Throw(Status::Usage("the loader is closed"));
    return f(*loader_);
  }

  // Stops the loader's threads and frees what it holds but the batches handed out.
  void Close() {
    py::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mu_);
    loader_.reset();
  }

 protected:
  // Opens the loader with `open` (the GIL released).
  template <typename Open>
  void Hold(Open&& open) {
    auto r = [&] {
      py::gil_scoped_release unlocked;
      return open();
    }();
    loader_ = Take(std::move(r));
  }
  // The batch Next() returned, after a signal's check; null at an epoch's end.
  std::shared_ptr<LoadedBatch> Taken(Result<std::shared_ptr<LoadedBatch>> r) {
    RaiseIfPythonError();
    // A signal that came as Next returned raises here too (the batch goes back to the pool).
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    return Take(std::move(r));
  }

  std::vector<std::shared_ptr<const Dataset>> datasets_;

 private:
  std::mutex mu_;
  std::unique_ptr<L> loader_;
};

// One rf::Loader and the dataset it reads.
class NativeLoader : public NativeHolder<Loader> {
 public:
  NativeLoader(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options) {
    datasets_ = {std::move(dataset)};
    // Batches made on the loader's own thread: a training loop's Python thread only takes them.
    LoaderOptions o = options;
    o.worker = true;
    Hold([&] { return Loader::Create(*datasets_[0], o); });
  }
  // A mixture of datasets (options.pipeline.weights).
  NativeLoader(std::vector<std::shared_ptr<const Dataset>> datasets, const LoaderOptions& options) {
    datasets_ = std::move(datasets);
    std::vector<const Dataset*> d;
    for (const auto& p : datasets_) d.push_back(p.get());
    Hold([&] { return Loader::Create(d, options); });
  }

  void StartEpoch(uint64_t epoch, uint64_t position) {
    const Status st = Locked([&](Loader& l) { return l.StartEpoch(epoch, position); });
    RaiseIfPythonError();
    Check(st);
  }

  py::object Next() {
    std::shared_ptr<LoadedBatch> b = Taken(Locked([](Loader& l) { return l.Next(); }));
    if (!b) return py::none();
    // Records of any size: (values, offsets, labels).
    if (b->offsets() != nullptr) {
      return py::make_tuple(Tensor{b, BatchPart::kSamples}, Tensor{b, BatchPart::kOffsets},
                            Tensor{b, BatchPart::kLabels});
    }
    return py::make_tuple(Tensor{b, BatchPart::kSamples}, Tensor{b, BatchPart::kLabels});
  }

  // The epoch's skipped image records as one line (Python counts epochs from 0), "" for none.
  std::string Skipped() {
    return Locked([](Loader& l) {
      const SkippedRecords s = l.skipped();
      return s.Text(s.epoch);
    });
  }
};

// One rf::SequenceLoader and the datasets it reads.
class NativeSequenceLoader : public NativeHolder<SequenceLoader> {
 public:
  NativeSequenceLoader(std::vector<std::shared_ptr<const Dataset>> datasets,
                       const LoaderOptions& options)
      : options_(options) {
    datasets_ = std::move(datasets);
    std::vector<const Dataset*> d;
    for (const auto& p : datasets_) d.push_back(p.get());
    Hold([&] { return SequenceLoader::Create(d, SequenceSpecFor(options)); });
  }
  const LoaderOptions& options() const { return options_; }

  // (tokens, lengths, cu_seqlens, position_ids), or None where one dataset's epoch ends.
  py::object Next() {
    std::shared_ptr<LoadedBatch> b = Taken(Locked([](SequenceLoader& l) { return l.Next(); }));
    if (!b) return py::none();
    return py::make_tuple(Tensor{b, BatchPart::kView, 0}, Tensor{b, BatchPart::kView, 1},
                          Tensor{b, BatchPart::kView, 2}, Tensor{b, BatchPart::kView, 3});
  }

 private:
  LoaderOptions options_;
};

py::dict SequenceStateDict(const SequenceState& s) {
  py::dict d;
  d["rows"] = s.rows;
  d["drawn"] = s.drawn;
  py::list sources;
  for (const SequenceSourceState& g : s.sources) {
    py::dict x;
    x["epoch"] = g.epoch;
    x["position"] = g.position;
    x["world_size"] = g.world_size;
    py::list ranges;
    for (const SequenceRange& r : g.list) ranges.append(py::make_tuple(r.begin, r.end));
    x["list"] = ranges;
    sources.append(x);
  }
  d["sources"] = sources;
  return d;
}

SequenceState SequenceStateFrom(const py::dict& d) {
  SequenceState s;
  try {
    s.rows = d["rows"].cast<uint64_t>();
    s.drawn = d["drawn"].cast<std::vector<uint64_t>>();
    for (py::handle h : d["sources"].cast<py::list>()) {
      const py::dict x = h.cast<py::dict>();
      SequenceSourceState g;
      g.epoch = x["epoch"].cast<uint64_t>();
      g.position = x["position"].cast<uint64_t>();
      g.world_size = x["world_size"].cast<uint32_t>();
      for (const auto& r : x["list"].cast<std::vector<std::pair<uint64_t, uint64_t>>>())
        g.list.push_back({r.first, r.second});
      s.sources.push_back(std::move(g));
    }
  } catch (const py::error_already_set&) {
    throw;
  } catch (const std::exception& e) {
    Throw(Status::Usage(std::string("load_state_dict: malformed sequences state (") + e.what() +
                        ")"));
  }
  return s;
}

// A sample mixture's state (core/order_settings.h's MixtureState) as Python gives and takes it:
// {"steps", "drawn", "sources": [{"epoch", "position", "stretches": [(world_size, position)]}]}.
py::dict MixtureStateDict(const MixtureState& s) {
  py::dict d;
  d["steps"] = s.steps;
  d["drawn"] = s.drawn;
  py::list sources;
  for (const MixtureSourceState& g : s.sources) {
    py::dict x;
    x["epoch"] = g.epoch;
    x["position"] = g.position;
    py::list stretches;
    for (const EpochStretch& st : g.stretches)
      stretches.append(py::make_tuple(st.world_size, st.position));
    x["stretches"] = stretches;
    sources.append(x);
  }
  d["sources"] = sources;
  return d;
}

MixtureState MixtureStateFrom(const py::dict& d) {
  MixtureState s;
  try {
    s.steps = d["steps"].cast<uint64_t>();
    s.drawn = d["drawn"].cast<std::vector<uint64_t>>();
    for (py::handle h : d["sources"].cast<py::list>()) {
      const py::dict x = h.cast<py::dict>();
      MixtureSourceState g;
      g.epoch = x["epoch"].cast<uint64_t>();
      g.position = x["position"].cast<uint64_t>();
      for (const auto& [w, p] : x["stretches"].cast<std::vector<std::pair<uint32_t, uint64_t>>>())
        g.stretches.push_back({w, p});
      s.sources.push_back(std::move(g));
    }
  } catch (const py::error_already_set&) {
    throw;
  } catch (const std::exception& e) {
    Throw(
        Status::Usage(std::string("load_state_dict: malformed mixture state (") + e.what() + ")"));
  }
  return s;
}

// --- Options ---------------------------------------------------------------------------------
// Every keyword argument of the loader is an option of pipeline/plan/loader_options.h's table: each
// is converted by its declared type alone (option_values.h) and set through the table (its bounds,
// its words, where it does something), so this file holds no option of its own.

// The LoaderOptions the keyword arguments `options` ask for (None: the default), refusing one
// that would do nothing with the others as the command line does.
LoaderOptions MakeOptions(const Dataset& d, const py::dict& options, int gpu) {
  const OptionTable<LoaderOptions>& table = LoaderOptionTable();
  LoaderOptions o;
  const std::set<std::string> given = SetKeywords(table, kLoaderApi, options, &o);
  Check(table.RefuseIdle(o, given, OptionFace::kPython));
  // What the data calls for where they are left out (ResolveLoader).
  o.output.given = {true, given.count("dtype") != 0, given.count("normalize") != 0};
  o.pipeline.data = d.shard_path(0);
  Check(o.pipeline.Validate(OptionFace::kPython));  // what Loader::Create checks, named as here
  o.gpu = gpu;
  o.poll = CheckSignals;
  return o;
}

// A resumed epoch's stretches (core/order_settings.h's EpochStretch, oldest first) as Python gives
// and takes them: [(world_size, position), ...].
using StretchList = std::vector<std::pair<uint32_t, uint64_t>>;
std::vector<EpochStretch> StretchesFrom(const StretchList& list) {
  std::vector<EpochStretch> out;
  for (const auto& [world_size, position] : list) out.push_back({world_size, position});
  return out;
}
StretchList StretchListOf(const std::vector<EpochStretch>& stretches) {
  StretchList out;
  for (const EpochStretch& st : stretches) out.emplace_back(st.world_size, st.position);
  return out;
}

// A loader's options as Python values, by their Python names.
py::dict OptionValues(const LoaderOptions& o) {
  return python::OptionValues(LoaderOptionTable(), kLoaderApi, o);
}

py::dict StatsDict(const LoaderStats& s) {
  py::dict d;
  d["bytes_read"] = s.bytes_read;
  d["bytes_delivered"] = s.bytes_delivered;
  d["decode_busy_seconds"] = s.decode_busy_seconds;
  d["decode_threads"] = s.decode_threads;
  d["seconds"] = s.seconds;
  d["wait_seconds"] = s.wait_seconds;
  d["reader_held_seconds"] = s.reader_held_seconds;
  d["batches"] = s.batches;
  d["image_threads"] = s.image_threads;
  d["image_busy_seconds"] = s.image_busy_seconds;
  d["images_decoded"] = s.images_decoded;
  d["records_skipped"] = s.records_skipped;
  d["image_wait_seconds"] = s.image_wait_seconds;
  return d;
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
      .def(py::init([](const std::string& path) {
             auto r = [&] {
               py::gil_scoped_release unlocked;
               return Dataset::Open(path);
             }();
             return std::make_shared<Dataset>(Take(std::move(r)));
           }),
           py::arg("path"))
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

  m.def(
      "loader_options", [] { return OptionList(LoaderOptionTable().Specs(kLoaderApi)); },
      "The loader's options (pipeline/plan/loader_options.h): a list of dicts of name, type, "
      "default, rule, words, unset (what None means where the default is not one value) and "
      "help.");
  m.attr("max_epoch") = py::int_(kMaxEpoch);
  m.def(
      "resume_at",
      [](uint64_t epoch, const StretchList& stretches, uint32_t saved_world_size, uint64_t position,
         uint32_t world_size) {
        const ResumePoint at =
            ResumeAt(epoch, StretchesFrom(stretches), saved_world_size, position, world_size);
        return std::make_pair(StretchListOf(at.resumed.stretches), at.position);
      },
      py::arg("epoch"), py::arg("stretches"), py::arg("saved_world_size"), py::arg("position"),
      py::arg("world_size"),
      "pipeline/order/window_order.h's ResumeAt, ringfeed train's resume rule: where a loader of "
      "world_size ranks continues a state of `epoch` saved at `position` by one of "
      "saved_world_size ranks resumed with `stretches`: (its stretches, its position).");

  py::class_<NativeSequenceLoader>(m, "_SequenceLoader",
                                   "One rf::SequenceLoader over _Datasets (see ringfeed.Loader).")
      .def(py::init([](std::vector<std::shared_ptr<Dataset>> ds, const py::dict& options, int gpu) {
             if (ds.empty()) Throw(Status::Usage("data: no dataset"));
             LoaderOptions o = MakeOptions(*ds[0], options, gpu);
             std::vector<std::shared_ptr<const Dataset>> c(ds.begin(), ds.end());
             return std::make_unique<NativeSequenceLoader>(std::move(c), o);
           }),
           py::arg("datasets"), py::arg("options"), py::arg("gpu") = -1)
      .def("options", [](NativeSequenceLoader& n) { return OptionValues(n.options()); })
      .def("next", &NativeSequenceLoader::Next,
           "SequenceLoader::Next: (tokens, lengths, cu_seqlens, position_ids), or None where one "
           "dataset's epoch ends.")
      .def("close", [](NativeSequenceLoader& n) { n.Close(); })
      .def("state",
           [](NativeSequenceLoader& n) {
             return SequenceStateDict(n.Locked([](SequenceLoader& l) { return l.state(); }));
           })
      .def(
          "restore",
          [](NativeSequenceLoader& n, const py::dict& d) {
            const SequenceState s = SequenceStateFrom(d);
            Check(n.Locked([&](SequenceLoader& l) { return l.Restore(s); }));
          },
          py::arg("state"))
      .def("epoch_sequences",
           [](NativeSequenceLoader& n, size_t i) {
             return n.Locked([&](SequenceLoader& l) { return l.epoch_sequences(i); });
           })
      .def("batches_per_epoch",
           [](NativeSequenceLoader& n) {
             return n.Locked([](SequenceLoader& l) { return l.batches_per_epoch(); });
           })
      .def("gpu_device",
           [](NativeSequenceLoader& n) {
             return n.Locked([](SequenceLoader& l) { return l.gpu_device(); });
           })
      .def("describe",
           [](NativeSequenceLoader& n) {
             return n.Locked([](SequenceLoader& l) { return l.Describe(); });
           })
      .def("stats", [](NativeSequenceLoader& n) {
        return StatsDict(n.Locked([](SequenceLoader& l) { return l.stats(); }));
      });

  py::class_<NativeLoader>(m, "_Loader", "One rf::Loader over a _Dataset (see ringfeed.Loader).")
      .def(py::init([](std::shared_ptr<Dataset> d, const py::dict& options, int gpu,
                       uint64_t resumed_epoch, const StretchList& stretches) {
             LoaderOptions o = MakeOptions(*d, options, gpu);
             // A state dict's resumed epoch: PipelineConfig's, checked by Loader::Create.
             o.pipeline.order.resumed = ResumedEpoch{resumed_epoch, StretchesFrom(stretches)};
             return std::make_unique<NativeLoader>(std::move(d), o);
           }),
           py::arg("dataset"), py::arg("options"), py::arg("gpu") = -1,
           py::arg("resumed_epoch") = 0, py::arg("stretches") = StretchList{})
      .def(py::init([](std::vector<std::shared_ptr<Dataset>> ds, const py::dict& options, int gpu,
                       uint64_t resumed_epoch, const StretchList& stretches,
                       const py::object& mixture, uint32_t saved_world_size) {
             if (ds.empty()) Throw(Status::Usage("data: no dataset"));
             LoaderOptions o = MakeOptions(*ds[0], options, gpu);
             o.pipeline.order.resumed = ResumedEpoch{resumed_epoch, StretchesFrom(stretches)};
             if (!mixture.is_none()) {
               o.pipeline.mixture = ContinueMixture(MixtureStateFrom(mixture.cast<py::dict>()),
                                                    saved_world_size, o.pipeline.order.world_size);
             }
             std::vector<std::shared_ptr<const Dataset>> c(ds.begin(), ds.end());
             return std::make_unique<NativeLoader>(std::move(c), o);
           }),
           py::arg("datasets"), py::arg("options"), py::arg("gpu") = -1,
           py::arg("resumed_epoch") = 0, py::arg("stretches") = StretchList{},
           py::arg("mixture") = py::none(), py::arg("saved_world_size") = 1,
           "A sample mixture of the datasets (options' weights), starting at `mixture` (a state "
           "saved at saved_world_size, continued at this world size) or at its start.")
      .def(
          "mixture_state",
          [](NativeLoader& n) -> py::object {
            const std::optional<MixtureState> s = n.Locked([](Loader& l) {
              const MixtureState* m = l.mixture_state();
              return m ? std::optional<MixtureState>(*m) : std::nullopt;
            });
            return s ? py::object(MixtureStateDict(*s)) : py::object(py::none());
          },
          "A mixture's stream after the last batch handed out (MixtureState), or None.")
      .def(
          "restore_mixture",
          [](NativeLoader& n, const py::dict& state, uint32_t saved_world_size,
             uint64_t resumed_epoch, const StretchList& stretches) {
            const MixtureState saved = MixtureStateFrom(state);
            Check(n.Locked([&](Loader& l) {
              const MixtureState s =
                  ContinueMixture(saved, saved_world_size, l.options().pipeline.order.world_size);
              return l.RestoreMixture(s, ResumedEpoch{resumed_epoch, StretchesFrom(stretches)});
            }));
          },
          py::arg("state"), py::arg("saved_world_size"), py::arg("resumed_epoch"),
          py::arg("stretches"),
          "Loader::RestoreMixture of `state` saved at saved_world_size (ContinueMixture), with the "
          "mixture epoch's stretches; the next start_epoch places it.")
      .def("options",
           [](NativeLoader& n) {
             const LoaderOptions o = n.Locked([](Loader& l) { return l.options(); });
             return OptionValues(o);
           })
      .def("start_epoch", &NativeLoader::StartEpoch, py::arg("epoch"), py::arg("position"),
           "Loader::StartEpoch: the next batches come from `epoch` at `position`.")
      .def("skipped", &NativeLoader::Skipped,
           "Loader::skipped: the bad image records skipped in the current epoch, as one line "
           "('' for none).")
      .def("next", &NativeLoader::Next,
           "Loader::Next: (samples, labels) of the next batch, or None at the epoch's end.")
      .def(
          "close", [](NativeLoader& n) { n.Close(); },
          "Stops the loader (batches handed out stay valid).")
      .def("epoch_samples",
           [](NativeLoader& n) { return n.Locked([](Loader& l) { return l.epoch_samples(); }); })
      .def(
          "epoch_samples_for",
          [](NativeLoader& n, uint64_t epoch, uint64_t resumed_epoch,
             const StretchList& stretches) {
            return Take(n.Locked([&](Loader& l) {
              return l.EpochSamplesFor(epoch,
                                       ResumedEpoch{resumed_epoch, StretchesFrom(stretches)});
            }));
          },
          py::arg("epoch"), py::arg("resumed_epoch"), py::arg("stretches"),
          "PipelineConfig::EpochSamplesFor: the samples epoch `epoch` holds for a loader of these "
          "options resumed with `stretches` of `resumed_epoch`, without opening one; UsageError "
          "for stretches the dataset cannot have had.")
      .def(
          "batches_per_epoch",
          [](NativeLoader& n) { return n.Locked([](Loader& l) { return l.batches_per_epoch(); }); })
      .def("gpu_device",
           [](NativeLoader& n) { return n.Locked([](Loader& l) { return l.gpu_device(); }); })
      .def("sample_shape",
           [](NativeLoader& n) { return n.Locked([](Loader& l) { return l.sample_shape(); }); })
      .def(
          "kind",
          [](NativeLoader& n) {
            return std::string(BatchKindName(n.Locked([](Loader& l) { return l.plan().kind; })));
          },
          "The kind of batch ResolveLoader decided: 'tensors', 'records' or 'images'.")
      .def("describe",
           [](NativeLoader& n) { return n.Locked([](Loader& l) { return l.Describe(); }); })
      .def("stats", [](NativeLoader& n) {
        return StatsDict(n.Locked([](Loader& l) { return l.stats(); }));
      });
}
