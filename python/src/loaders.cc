#include "python/src/loaders.h"

#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "io/dataset.h"
#include "options/option_table.h"
#include "pipeline/epoch_loader.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/sources/batch_source.h"
#include "pipeline/sources/pipeline_config.h"
#include "python/src/json_values.h"
#include "python/src/option_values.h"
#include "python/src/status_error.h"
#include "python/src/tensor.h"

namespace py = pybind11;

namespace rf::python {
namespace {

bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

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

// A native loader (rf::EpochLoader, `L`) held for Python: its calls run under
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
  // What a call that waits for data returned, after a signal's check.
  template <typename T>
  T Taken(Result<T> r) {
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
  o.pipeline.ResolveLocalRanks(LauncherLocalRanks());
  Check(o.pipeline.CheckPartition(OptionFace::kPython));
  Check(o.pipeline.Validate(OptionFace::kPython));  // what Loader::Create checks, named as here
  o.gpu = gpu;
  o.poll = CheckSignals;
  return o;
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

// A batch as Python takes it: (samples, labels); records of any size (values, offsets, labels);
// packed sequences (tokens, lengths, cu_seqlens, position_ids); samples of several fields a dict
// by field name (pipeline/fields/field_split.h: a tensor, (values, offsets), or the labels). Each
// array is wrap(Tensor): the Tensor itself, or what a framework made of it.
template <typename Wrap>
py::object BatchObject(const std::shared_ptr<LoadedBatch>& b, Wrap&& wrap) {
  if (!b) return py::none();
  if (!b->fields().empty()) {  // samples of several fields: a dict by name, in table order
    py::dict d;
    for (const LoadedBatch::Field& f : b->fields()) {
      if (f.where == LoadedBatch::Field::kSamples) {
        d[py::str(f.name)] = wrap(Tensor{b, BatchPart::kSamples});
      } else if (f.where == LoadedBatch::Field::kLabels) {
        d[py::str(f.name)] = wrap(Tensor{b, BatchPart::kLabels});
      } else if (f.offsets < 0) {
        d[py::str(f.name)] = wrap(Tensor{b, BatchPart::kView, static_cast<size_t>(f.values)});
      } else {
        d[py::str(f.name)] =
            py::make_tuple(wrap(Tensor{b, BatchPart::kView, static_cast<size_t>(f.values)}),
                           wrap(Tensor{b, BatchPart::kView, static_cast<size_t>(f.offsets)}));
      }
    }
    return d;
  }
  if (!b->views().empty()) {
    return py::make_tuple(
        wrap(Tensor{b, BatchPart::kView, 0}), wrap(Tensor{b, BatchPart::kView, 1}),
        wrap(Tensor{b, BatchPart::kView, 2}), wrap(Tensor{b, BatchPart::kView, 3}));
  }
  if (b->offsets() != nullptr) {
    return py::make_tuple(wrap(Tensor{b, BatchPart::kSamples}),
                          wrap(Tensor{b, BatchPart::kOffsets}),
                          wrap(Tensor{b, BatchPart::kLabels}));
  }
  return py::make_tuple(wrap(Tensor{b, BatchPart::kSamples}), wrap(Tensor{b, BatchPart::kLabels}));
}

// set_epoch's argument: an int (anything with __index__ but a bool) from 0 to kMaxEpoch; Usage
// "epoch must be a whole number from 0 to 4294967295, got REPR" otherwise.
uint64_t EpochArgument(py::handle v) {
  const std::string refusal = "epoch must be a whole number from 0 to " +
                              std::to_string(kMaxEpoch) + ", got " +
                              py::repr(v).cast<std::string>();
  if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) Throw(Status::Usage(refusal));
  const py::int_ n = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
  if (!n) throw py::error_already_set();
  int overflow = 0;
  const long long e = PyLong_AsLongLongAndOverflow(n.ptr(), &overflow);
  if (overflow != 0 || e < 0 || static_cast<uint64_t>(e) > kMaxEpoch) Throw(Status::Usage(refusal));
  return static_cast<uint64_t>(e);
}

std::vector<const Dataset*> Pointers(const std::vector<std::shared_ptr<const Dataset>>& ds) {
  std::vector<const Dataset*> d;
  for (const auto& p : ds) d.push_back(p.get());
  return d;
}

// One rf::EpochLoader and the datasets it reads (one, or a mixture's).
class NativeLoader : public NativeHolder<EpochLoader> {
 public:
  NativeLoader(std::vector<std::shared_ptr<const Dataset>> datasets, LoaderOptions options) {
    datasets_ = std::move(datasets);
    // Batches made on the loader's own thread: a training loop's Python thread only takes them.
    options.worker = true;
    Hold([&] { return EpochLoader::Create(Pointers(datasets_), options); });
  }

  // (the batch's tuple or None at the iteration's end, the epoch's report of skipped records).
  // With `import_capsule` (a framework's DLPack import, torch's for tensors="torch"), each array
  // is import_capsule(capsule) instead of a ringfeed.Tensor, after one wait of `stream` (a GPU
  // batch: that cudaStream_t as an int, 0 the legacy default stream) for the whole batch.
  py::object Next(uint64_t epoch, uint64_t generation, py::object import_capsule,
                  py::object stream) {
    const EpochLoader::Taken t = Taken(Locked([&](EpochLoader& l) {
      return l.Next(EpochLoader::Iteration{epoch, generation});
    }));
    if (import_capsule.is_none()) {
      return py::make_tuple(BatchObject(t.batch, [](Tensor x) { return py::cast(std::move(x)); }),
                            t.skipped);
    }
    if (t.batch && t.batch->on_gpu()) {
      const int64_t s = stream.is_none() ? 0 : stream.cast<int64_t>();
      DlpackRequest r;
      r.stream = s == 0 ? kStreamLegacyDefault : s;  // torch's raw 0: the legacy default stream
      const Status st = PrepareExport(*t.batch, r);
      if (!st.ok()) Throw(st, /*buffer=*/true);
    }
    return py::make_tuple(
        BatchObject(t.batch, [&](const Tensor& x) { return import_capsule(NewCapsule(x)); }),
        t.skipped);
  }

  template <typename F>
  auto WithLoader(F&& f) {
    return Locked([&](EpochLoader& e) { return f(*Take(e.loader())); });
  }
};

// The datasets a binding is handed, refusing none.
std::vector<std::shared_ptr<const Dataset>> Held(const std::vector<std::shared_ptr<Dataset>>& ds) {
  if (ds.empty()) Throw(Status::Usage("data: no dataset"));
  return std::vector<std::shared_ptr<const Dataset>>(ds.begin(), ds.end());
}

}  // namespace

namespace detail {
std::shared_ptr<Dataset> OpenDataset(const std::string& path, const py::dict& options,
                                     uint32_t datasets) {
  LoaderOptions o;
  SetKeywords(LoaderOptionTable(), kLoaderApi, options, &o);
  o.pipeline.data = path;
  o.pipeline.ResolveLocalRanks(LauncherLocalRanks());
  Check(o.pipeline.CheckPartition(OptionFace::kPython));
  Check(o.pipeline.Validate(OptionFace::kPython));  // the options' bounds, named as here
  auto r = [&] {
    py::gil_scoped_release unlocked;
    return rf::OpenDataset(o.pipeline, path, datasets);
  }();
  return std::make_shared<Dataset>(Take(std::move(r)));
}
}  // namespace detail

void BindLoaders(py::module_& m) {
  m.def(
      "loader_options", [] { return OptionList(LoaderOptionTable().Specs(kLoaderApi)); },
      "The loader's options (pipeline/plan/loader_options.h): a list of dicts of name, type, "
      "default, rule, words, unset (what None means where the default is not one value) and "
      "help.");
  m.attr("max_epoch") = py::int_(kMaxEpoch);

  py::class_<NativeLoader>(m, "_Loader",
                           "One rf::EpochLoader over _Datasets: one, or a mixture's with the "
                           "options' weights (see ringfeed.Loader).")
      .def(py::init([](std::vector<std::shared_ptr<Dataset>> ds, const py::dict& options, int gpu) {
             auto held = Held(ds);
             return std::make_unique<NativeLoader>(std::move(held),
                                                   MakeOptions(*ds[0], options, gpu));
           }),
           py::arg("datasets"), py::arg("options"), py::arg("gpu") = -1)
      .def(
          "begin",
          [](NativeLoader& n) {
            const EpochLoader::Iteration it = n.Locked([](EpochLoader& l) { return l.Begin(); });
            return std::make_pair(it.epoch, it.generation);
          },
          "An iteration of the rest of the current epoch: (epoch, generation).")
      .def("next", &NativeLoader::Next, py::arg("epoch"), py::arg("generation"),
           py::arg("import_capsule") = py::none(), py::arg("stream") = py::none(),
           "EpochLoader::Next of the iteration (epoch, generation): (the batch's tuple, or None "
           "at the iteration's end; the epoch's skipped records as one line, '' for none). With "
           "import_capsule, each array is import_capsule(a DLPack capsule) after one wait of "
           "`stream` (an int cudaStream_t, 0 the legacy default) for a GPU batch.")
      .def(
          "set_epoch",
          [](NativeLoader& n, py::handle epoch) {
            const uint64_t e = EpochArgument(epoch);
            Check(n.Locked([&](EpochLoader& l) { return l.SetEpoch(e); }));
          },
          py::arg("epoch"))
      .def(
          "state_dict",
          [](NativeLoader& n) {
            return PythonFromJson(n.Locked([](EpochLoader& l) { return l.State(); }));
          },
          "EpochLoader::State as a dict (pipeline/state/loader_state.h).")
      .def(
          "load_state_dict",
          [](NativeLoader& n, py::handle state) {
            const StateJson saved = JsonFromPython(state, "the state");
            Check(n.Locked([&](EpochLoader& l) { return l.Restore(saved); }));
          },
          py::arg("state"), "EpochLoader::Restore of a state dict.")
      .def("epoch",
           [](NativeLoader& n) { return n.Locked([](EpochLoader& l) { return l.epoch(); }); })
      .def("position",
           [](NativeLoader& n) { return n.Locked([](EpochLoader& l) { return l.position(); }); })
      .def("epoch_samples",
           [](NativeLoader& n) {
             return n.Locked([](EpochLoader& l) { return l.epoch_samples(); });
           })
      .def("batches",
           [](NativeLoader& n) { return n.Locked([](EpochLoader& l) { return l.batches(); }); })
      .def(
          "epoch_sequences",
          [](NativeLoader& n, size_t i) {
            return n.WithLoader([&](Loader& l) { return l.epoch_sequences(i); });
          },
          py::arg("dataset"), "Packed sequences: dataset i's sequences an epoch (all ranks).")
      .def(
          "close", [](NativeLoader& n) { n.Close(); },
          "Stops the loader (batches handed out stay valid).")
      .def("options",
           [](NativeLoader& n) {
             return OptionValues(n.WithLoader([](Loader& l) { return l.options(); }));
           })
      .def("gpu_device",
           [](NativeLoader& n) { return n.WithLoader([](Loader& l) { return l.gpu_device(); }); })
      .def("sample_shape",
           [](NativeLoader& n) { return n.WithLoader([](Loader& l) { return l.sample_shape(); }); })
      .def(
          "kind",
          [](NativeLoader& n) {
            return std::string(
                BatchKindName(n.WithLoader([](Loader& l) { return l.plan().kind; })));
          },
          "The kind of batch ResolveLoader decided: 'tensors', 'records', 'images' or "
          "'sequences'.")
      .def("describe",
           [](NativeLoader& n) { return n.WithLoader([](Loader& l) { return l.Describe(); }); })
      .def("stats", [](NativeLoader& n) {
        return StatsDict(n.WithLoader([](Loader& l) { return l.stats(); }));
      });
}

}  // namespace rf::python
