#include "python/src/writer.h"

#include <pybind11/stl.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "io/dataset_writer.h"
#include "io/fields.h"
#include "io/writer_options.h"
#include "python/src/option_values.h"
#include "python/src/status_error.h"

namespace py = pybind11;

namespace rf::python {
namespace {

// One writer; finish() commits it, abort() (or dropping it unfinished) removes what it wrote.
// Used by one Python thread at a time (writer.py holds a lock).
class NativeWriter {
 public:
  // `options`: ringfeed.DatasetWriter's keyword arguments, every one an option of
  // io/writer_options.h's table, set through it (None: the default).
  NativeWriter(const py::object& path, const py::dict& options) {
    if (!PyUnicode_Check(path.ptr())) {
      Throw(Status::Usage("path must be a str path, got " + py::repr(path).cast<std::string>()));
    }
    const OptionTable<WriterConfig>& table = WriterOptionTable();
    const std::set<std::string> given = SetKeywords(table, kWriterApi, options, &config_);
    Check(table.RefuseIdle(config_, given, OptionFace::kPython, kWriterApi));
    Check(CheckWriterSpec(config_, OptionFace::kPython));
    const DatasetSpec& spec = config_.spec;
    sample_bytes_ = DTypeSize(spec.sample_dtype);
    for (uint64_t d : spec.shape) sample_bytes_ *= d;
    label_bytes_ = DTypeSize(spec.label_dtype);
    const std::string where = path.cast<std::string>();
    auto w = [&] {
      py::gil_scoped_release unlocked;
      return DatasetWriter::Create(where, spec, config_.options);
    }();
    writer_ = Take(std::move(w));
  }

  // The options as the writer took them (its defaults where not given), by their Python names.
  py::dict Options() const { return OptionValues(WriterOptionTable(), kWriterApi, config_); }
  // The samples' fields (records fields; empty otherwise), as FieldPairs gives them.
  py::list Fields() const { return FieldPairs(config_.spec.fields); }

  // n samples (n x the sample's bytes) and their n labels (or None), contiguous, in the stored
  // dtypes: writer.py made them so.
  void Append(const py::buffer& samples, const py::object& labels, uint64_t n) {
    DatasetWriter& w = Open();
    const py::buffer_info s = samples.request();
    if (static_cast<uint64_t>(s.size * s.itemsize) != n * sample_bytes_)
      Throw(Status::InvalidArgument("samples hold " + std::to_string(s.size * s.itemsize) +
                                    " bytes, not " + std::to_string(n) + " samples' " +
                                    std::to_string(n * sample_bytes_)));
    const py::buffer_info l = LabelsOf(labels, n);
    Status st;
    {
      py::gil_scoped_release unlocked;
      st = w.Append(s.ptr, labels.is_none() ? nullptr : l.ptr, n);
    }
    Check(st);
  }

  // n records of any size: `values` (the sample dtype), `offsets` (n + 1 uint64, in elements),
  // labels as for Append; contiguous, in the stored dtypes: writer.py made them so.
  void AppendRecords(const py::buffer& values, const py::buffer& offsets, const py::object& labels,
                     uint64_t n) {
    DatasetWriter& w = Open();
    const py::buffer_info v = values.request();
    const py::buffer_info o = offsets.request();
    if (o.itemsize != sizeof(uint64_t) || static_cast<uint64_t>(o.size) != n + 1)
      Throw(Status::InvalidArgument("offsets must be n + 1 uint64"));
    const auto* off = static_cast<const uint64_t*>(o.ptr);
    const uint64_t elem = sample_bytes_;  // one element: records have a 1-element shape here
    if (off[n] > static_cast<uint64_t>(v.size * v.itemsize) / elem)
      Throw(Status::InvalidArgument("the offsets run past the values"));
    const py::buffer_info l = LabelsOf(labels, n);
    Status st;
    {
      py::gil_scoped_release unlocked;
      st = w.AppendRecords(v.ptr, off, labels.is_none() ? nullptr : l.ptr, n);
    }
    Check(st);
  }

  // n samples of several fields (records fields): `samples` a list of n lists, each the sample's
  // stored fields' bytes (buffers, in the table's order, all but the label); labels as for Append.
  // Each sample's record is made by format::EncodeSample and checked by the writer.
  void AppendSamples(const py::list& samples, const py::object& labels) {
    DatasetWriter& w = Open();
    const std::vector<format::FieldSpec>& fields = config_.spec.fields;
    const uint32_t stored = format::StoredFieldCount(fields);
    const uint64_t n = samples.size();
    std::vector<uint8_t> values;
    std::vector<uint64_t> offsets{0};
    std::vector<const uint8_t*> parts(stored);
    std::vector<uint64_t> sizes(stored);
    for (uint64_t i = 0; i < n; ++i) {
      const py::list sample = samples[i].cast<py::list>();
      if (sample.size() != stored)
        Throw(Status::InvalidArgument("sample " + std::to_string(w.samples_written() + i) +
                                      " holds " + std::to_string(sample.size()) +
                                      " fields' bytes, not " + std::to_string(stored)));
      std::vector<py::buffer_info> held;
      for (uint32_t k = 0; k < stored; ++k) {
        held.push_back(sample[k].cast<py::buffer>().request());
        const uint64_t bytes = static_cast<uint64_t>(held.back().size * held.back().itemsize);
        if (bytes > UINT32_MAX)
          Throw(Status::InvalidArgument("sample " + std::to_string(w.samples_written() + i) +
                                        ": a field of " + std::to_string(bytes) +
                                        " bytes (a field holds less than 4 GiB)"));
        parts[k] = static_cast<const uint8_t*>(held.back().ptr);
        sizes[k] = bytes;
      }
      format::EncodeSample(fields, parts.data(), sizes.data(), &values);
      offsets.push_back(values.size());
    }
    const py::buffer_info l = LabelsOf(labels, n);
    Status st;
    {
      py::gil_scoped_release unlocked;
      st = w.AppendRecords(values.data(), offsets.data(), labels.is_none() ? nullptr : l.ptr, n);
    }
    Check(st);
  }

  py::dict Finish() {
    DatasetWriter& w = Open();
    Status st;
    {
      py::gil_scoped_release unlocked;
      st = w.Finish();
    }
    Check(st);
    py::dict d;
    d["paths"] = w.paths();
    d["removed"] = w.removed();
    d["samples"] = w.samples_written();
    d["stored_bytes"] = w.bytes_written();
    d["data_bytes"] = w.data_bytes_written();
    d["chunk_samples"] = w.chunk_samples();
    writer_.reset();
    return d;
  }

  void Abort() {
    py::gil_scoped_release unlocked;
    writer_.reset();  // its temporary files go with it (io/dataset_writer.h)
  }

  uint64_t samples() const { return writer_ ? writer_->samples_written() : 0; }
  bool open() const { return writer_ != nullptr; }

 private:
  // The n labels' buffer (an empty one for None), checked for its size.
  py::buffer_info LabelsOf(const py::object& labels, uint64_t n) const {
    py::buffer_info l;
    if (labels.is_none()) return l;
    l = labels.cast<py::buffer>().request();
    if (static_cast<uint64_t>(l.size * l.itemsize) != n * label_bytes_)
      Throw(Status::InvalidArgument("labels hold " + std::to_string(l.size * l.itemsize) +
                                    " bytes, not " + std::to_string(n) + " labels' " +
                                    std::to_string(n * label_bytes_)));
    return l;
  }

  DatasetWriter& Open() {
    if (!writer_) Throw(Status::Usage("the writer is closed"));
    return *writer_;
  }

  WriterConfig config_;
  std::unique_ptr<DatasetWriter> writer_;
  uint64_t sample_bytes_ = 0;
  uint64_t label_bytes_ = 0;
};

}  // namespace

py::list FieldPairs(const std::vector<format::FieldSpec>& fields) {
  py::list out;
  for (const format::FieldSpec& f : fields)
    out.append(py::make_tuple(f.name, format::FieldTypeText(f)));
  return out;
}

void BindWriter(py::module_& m) {
  m.def(
      "writer_options", [] { return OptionList(WriterOptionTable().Specs(kWriterApi)); },
      "ringfeed.DatasetWriter's options (io/writer_options.h): a list of dicts of name, type, "
      "default, rule, words, unset, help.");
  py::class_<NativeWriter>(m, "_DatasetWriter",
                           "rf::DatasetWriter (see ringfeed.DatasetWriter, which checks the "
                           "arrays this takes).")
      .def(py::init<const py::object&, const py::dict&>(), py::arg("path"), py::arg("options"))
      .def("options", &NativeWriter::Options)
      .def("fields", &NativeWriter::Fields)
      .def("append_records", &NativeWriter::AppendRecords, py::arg("values"), py::arg("offsets"),
           py::arg("labels"), py::arg("n"),
           "Appends n records of any size: values, n + 1 uint64 element offsets, labels.")
      .def("append_samples", &NativeWriter::AppendSamples, py::arg("samples"), py::arg("labels"),
           "Appends samples of several fields: lists of their stored fields' bytes, labels.")
      .def("append", &NativeWriter::Append, py::arg("samples"), py::arg("labels"), py::arg("n"),
           "Appends n samples and labels (None without labels), contiguous, stored dtypes.")
      .def("finish", &NativeWriter::Finish,
           "Writes the indices and headers and renames the shards into place.")
      .def("abort", &NativeWriter::Abort, "Drops the writer and its temporary files.")
      .def_property_readonly("samples", &NativeWriter::samples)
      .def_property_readonly("open", &NativeWriter::open);
}

}  // namespace rf::python
