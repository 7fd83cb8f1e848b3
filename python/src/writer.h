// The native half of ringfeed.DatasetWriter (python/ringfeed/writer.py): rf::DatasetWriter
// (io/dataset_writer.h) as _DatasetWriter, its keyword arguments set through the writer's option
// table (io/writer_options.h; writer_options() lists them for writer.py's signature and help).
// The Python half checks and converts arrays; this half takes contiguous buffers in the stored
// dtypes and releases the GIL while the writer copies, compresses and writes.
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "io/fields.h"

namespace rf::python {

// A dataset's fields as Python sees them: a list of (name, type) pairs in the table's order, the
// type as io/fields.h's ParseFields reads it ("image/jpeg", "tokens:int32", "label").
pybind11::list FieldPairs(const std::vector<format::FieldSpec>& fields);

void BindWriter(pybind11::module_& m);

}  // namespace rf::python
