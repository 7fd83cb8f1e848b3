// The native half of ringfeed.DatasetWriter (python/ringfeed/writer.py): rf::DatasetWriter
// (io/dataset_writer.h) as _DatasetWriter, its keyword arguments set through the writer's option
// table (io/writer_options.h; writer_options() lists them for writer.py's signature and help).
// The Python half checks and converts arrays; this half takes contiguous buffers in the stored
// dtypes and releases the GIL while the writer copies, compresses and writes.
#pragma once

#include <pybind11/pybind11.h>

namespace rf::python {

void BindWriter(pybind11::module_& m);

}  // namespace rf::python
