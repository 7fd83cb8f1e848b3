// The C interface between ringfeed and its MPI plugin (libringfeed_mpi.so, dist/mpi_plugin.cc),
// the only code that includes mpi.h or links libmpi. ringfeed loads the plugin with dlopen only
// when mpirun (or srun) started it, so a run of one process needs no MPI library installed; the
// plugin is linked against the machine's libmpi and resolves it when loaded.
//
// Plain C types across the boundary (no C++ ABI): one table of function pointers, filled by
// rf_mpi_open. Every call returns 0 on success or MPI's error code, with MPI's message (up to
// RF_MPI_ERROR_BYTES, NUL-terminated) in `err`; MPI errors return (MPI_ERRORS_RETURN) instead of
// ending the process.
//
// Threads: MPI is initialized MPI_THREAD_FUNNELED; the thread that called rf_mpi_open makes every
// call. Broadcasts and reductions take any size (the plugin splits what MPI's int counts cannot
// carry); the gathers and the all-to-all take up to INT_MAX bytes per rank (MPI_ERR_COUNT past).
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RF_MPI_PLUGIN_VERSION 1
#define RF_MPI_ERROR_BYTES 512

typedef struct RfMpi {
  int version;  // RF_MPI_PLUGIN_VERSION of the plugin that filled it
  int rank, size, local_rank, local_size;
  char library[256];  // the first line of MPI_Get_library_version
  int (*broadcast)(void* data, uint64_t bytes, int root, char* err);
  int (*allreduce_sum_f64)(double* data, uint64_t n, char* err);
  int (*allreduce_max_u64)(uint64_t* data, uint64_t n, char* err);
  int (*allreduce_min_u64)(uint64_t* data, uint64_t n, char* err);
  int (*gather)(const void* send, uint64_t bytes, void* recv, int root, char* err);
  int (*allgather)(const void* send, uint64_t bytes, void* recv, char* err);
  int (*alltoall)(const void* send, uint64_t bytes, void* recv, char* err);
  int (*barrier)(char* err);
  void (*abort)(int code);  // MPI_Abort(MPI_COMM_WORLD, code): does not return
  void (*finalize)(void);
} RfMpi;

// Initializes MPI and fills *out. The symbol ringfeed looks up in the plugin.
typedef int (*RfMpiOpenFn)(RfMpi* out, char* err);
int rf_mpi_open(RfMpi* out, char* err);

#ifdef __cplusplus
}
#endif
