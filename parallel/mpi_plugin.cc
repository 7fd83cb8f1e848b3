// ringfeed's MPI plugin: dist/mpi_plugin.h's table over the MPI C API. Built as its own shared
// object, linked against libmpi; ringfeed loads it only when mpirun or srun started it.
#include "parallel/mpi_plugin.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// The largest piece one MPI call moves where the plugin splits: well inside int counts.
constexpr uint64_t kPieceBytes = uint64_t{1} << 30;

int Fail(int code, const char* call, char* err) {
  char reason[MPI_MAX_ERROR_STRING] = "unknown error";
  int len = 0;
  MPI_Error_string(code, reason, &len);
  std::snprintf(err, RF_MPI_ERROR_BYTES, "%s failed: %s", call, reason);
  return code;
}

int CountFits(uint64_t bytes, const char* call, char* err) {
  if (bytes <= static_cast<uint64_t>(INT_MAX)) return MPI_SUCCESS;
  std::snprintf(err, RF_MPI_ERROR_BYTES, "%s: %llu bytes per rank is more than one call takes",
                call, static_cast<unsigned long long>(bytes));
  return MPI_ERR_COUNT;
}

int Broadcast(void* data, uint64_t bytes, int root, char* err) {
  auto* p = static_cast<char*>(data);
  for (uint64_t at = 0; at < bytes; at += kPieceBytes) {
    const int n = static_cast<int>(std::min(kPieceBytes, bytes - at));
    if (int rc = MPI_Bcast(p + at, n, MPI_BYTE, root, MPI_COMM_WORLD); rc != MPI_SUCCESS)
      return Fail(rc, "MPI_Bcast", err);
  }
  return MPI_SUCCESS;
}

template <typename T>
int AllReduce(T* data, uint64_t n, MPI_Datatype type, MPI_Op op, char* err) {
  const uint64_t piece = kPieceBytes / sizeof(T);
  for (uint64_t at = 0; at < n; at += piece) {
    const int count = static_cast<int>(std::min(piece, n - at));
    if (int rc = MPI_Allreduce(MPI_IN_PLACE, data + at, count, type, op, MPI_COMM_WORLD);
        rc != MPI_SUCCESS)
      return Fail(rc, "MPI_Allreduce", err);
  }
  return MPI_SUCCESS;
}

int AllReduceSumF64(double* data, uint64_t n, char* err) {
  return AllReduce(data, n, MPI_DOUBLE, MPI_SUM, err);
}
int AllReduceMaxU64(uint64_t* data, uint64_t n, char* err) {
  return AllReduce(data, n, MPI_UINT64_T, MPI_MAX, err);
}
int AllReduceMinU64(uint64_t* data, uint64_t n, char* err) {
  return AllReduce(data, n, MPI_UINT64_T, MPI_MIN, err);
}

int Gather(const void* send, uint64_t bytes, void* recv, int root, char* err) {
  if (int rc = CountFits(bytes, "MPI_Gather", err); rc != MPI_SUCCESS) return rc;
  const int n = static_cast<int>(bytes);
  if (int rc = MPI_Gather(send, n, MPI_BYTE, recv, n, MPI_BYTE, root, MPI_COMM_WORLD);
      rc != MPI_SUCCESS)
    return Fail(rc, "MPI_Gather", err);
  return MPI_SUCCESS;
}

int AllGather(const void* send, uint64_t bytes, void* recv, char* err) {
  if (int rc = CountFits(bytes, "MPI_Allgather", err); rc != MPI_SUCCESS) return rc;
  const int n = static_cast<int>(bytes);
  if (int rc = MPI_Allgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD);
      rc != MPI_SUCCESS)
    return Fail(rc, "MPI_Allgather", err);
  return MPI_SUCCESS;
}

int AllToAll(const void* send, uint64_t bytes, void* recv, char* err) {
  if (int rc = CountFits(bytes, "MPI_Alltoall", err); rc != MPI_SUCCESS) return rc;
  const int n = static_cast<int>(bytes);
  if (int rc = MPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD);
      rc != MPI_SUCCESS)
    return Fail(rc, "MPI_Alltoall", err);
  return MPI_SUCCESS;
}

int Barrier(char* err) {
  if (int rc = MPI_Barrier(MPI_COMM_WORLD); rc != MPI_SUCCESS) return Fail(rc, "MPI_Barrier", err);
  return MPI_SUCCESS;
}

void Abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort returns only where the implementation fails to abort
}

void Finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

extern "C" int rf_mpi_open(RfMpi* out, char* err) {
  std::memset(out, 0, sizeof *out);
  int provided = 0;
  if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS)
    return Fail(rc, "MPI_Init_thread", err);
  if (provided < MPI_THREAD_FUNNELED) {
    std::snprintf(err, RF_MPI_ERROR_BYTES,
                  "MPI_Init_thread: this MPI gives no MPI_THREAD_FUNNELED (only level %d)",
                  provided);
    return MPI_ERR_OTHER;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &out->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &out->size);
  MPI_Comm local;
  if (int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, out->rank, MPI_INFO_NULL,
                                   &local);
      rc != MPI_SUCCESS)
    return Fail(rc, "MPI_Comm_split_type", err);
  MPI_Comm_rank(local, &out->local_rank);
  MPI_Comm_size(local, &out->local_size);
  MPI_Comm_free(&local);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(version, &len);
  const size_t line = std::strcspn(version, "\n,");
  std::snprintf(out->library, sizeof out->library, "%.*s", static_cast<int>(line), version);
  out->version = RF_MPI_PLUGIN_VERSION;
  out->broadcast = Broadcast;
  out->allreduce_sum_f64 = AllReduceSumF64;
  out->allreduce_max_u64 = AllReduceMaxU64;
  out->allreduce_min_u64 = AllReduceMinU64;
  out->gather = Gather;
  out->allgather = AllGather;
  out->alltoall = AllToAll;
  out->barrier = Barrier;
  out->abort = Abort;
  out->finalize = Finalize;
  return MPI_SUCCESS;
}
