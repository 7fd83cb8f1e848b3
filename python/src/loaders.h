// The native half of ringfeed.Loader (python/ringfeed/loader.py): _Loader, one rf::EpochLoader
// (pipeline/epoch_loader.h: the epoch protocol and its checkpoints) over one _Dataset or a
// mixture of them, for every kind of batch (packed sequences too). The loader's options are
// pipeline/plan/loader_options.h's table: their names, defaults, bounds and help come from there
// (loader_options()), and each keyword argument is converted by its declared type and set through
// the table (MakeOptions), with no option named here. A state dict is converted value for value to
// the library's JSON (json_values.h), which checks it.
//
// The GIL is released around every call that can block (opening, Next, restoring, closing). A
// loader is used by one thread at a time (loader.h): each call takes the loader's mutex, with the
// GIL released while it waits, so a second Python thread blocks there instead of deadlocking on
// the GIL. Ctrl-C: the loader's poll (LoaderOptions::poll) runs Python's signal handlers about
// every 100 ms of a wait for data; a KeyboardInterrupt ends the wait and is raised from the call.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "io/dataset.h"

namespace rf::python {

void BindLoaders(pybind11::module_& m);

namespace detail {
// What _Dataset(path, options, datasets) opens: `path` with the loader options `options` (keyword
// arguments of Loader; of them only what opening reads: a remote dataset's fetch options and its
// cache, pipeline/sources/pipeline_config.h's RemoteConfig), the cache's budget shared by
// `datasets` (a mixture's). The GIL released while it opens.
std::shared_ptr<Dataset> OpenDataset(const std::string& path, const pybind11::dict& options,
                                     uint32_t datasets);
}  // namespace detail

}  // namespace rf::python
