// The calling thread's name, as `top -H`, /proc/PID/task/TID/comm and profilers show it: each of
// the pipeline's threads names itself, so that a profile or tools/bench/pack_throughput.cc tells
// the reader, the chunk stage (checksums, decompression), the copy and the packing apart (a thread
// that names none takes the name of the thread that started it).
#pragma once

#include <pthread.h>

namespace rf {

// `name`: at most 15 characters (a longer one is not set).
inline void NameThread(const char* name) { (void)pthread_setname_np(pthread_self(), name); }

}  // namespace rf
