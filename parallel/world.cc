#include "parallel/world.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "parallel/mpi_plugin.h"

namespace rf {
namespace {

class OneRank final : public World {
 public:
  std::string Describe() const override { return "1 process"; }
  Status Broadcast(void*, size_t, uint32_t) override { return Status::Ok(); }
  Status AllReduceSum(double*, size_t) override { return Status::Ok(); }
  Status AllReduceMax(uint64_t*, size_t) override { return Status::Ok(); }
  Status AllReduceMin(uint64_t*, size_t) override { return Status::Ok(); }
  Status Gather(const void* send, size_t bytes, void* recv, uint32_t) override {
    if (recv != send) std::memmove(recv, send, bytes);
    return Status::Ok();
  }
  Status AllGather(const void* send, size_t bytes, void* recv) override {
    return Gather(send, bytes, recv, 0);
  }
  Status AllToAll(const void* send, size_t bytes, void* recv) override {
    return Gather(send, bytes, recv, 0);
  }
  Status Barrier() override { return Status::Ok(); }
  [[noreturn]] void Abort(int code) override {
    std::fflush(nullptr);
    std::_Exit(code);
  }
};

// The plugin's table behind the World interface. The plugin stays loaded for the process's life
// (MPI cannot be initialized twice, so it is never unloaded).
class MpiWorld final : public World {
 public:
  explicit MpiWorld(const RfMpi& api) : api_(api) {
    rank_ = static_cast<uint32_t>(api.rank);
    size_ = static_cast<uint32_t>(api.size);
    local_rank_ = static_cast<uint32_t>(api.local_rank);
    local_size_ = static_cast<uint32_t>(api.local_size);
  }
  ~MpiWorld() override { api_.finalize(); }

  std::string Describe() const override {
    return std::to_string(size_) + " ranks (MPI: " + api_.library + ")";
  }
  Status Broadcast(void* data, size_t bytes, uint32_t root) override {
    return Check(api_.broadcast(data, bytes, static_cast<int>(root), err_));
  }
  Status AllReduceSum(double* data, size_t n) override {
    return Check(api_.allreduce_sum_f64(data, n, err_));
  }
  Status AllReduceMax(uint64_t* data, size_t n) override {
    return Check(api_.allreduce_max_u64(data, n, err_));
  }
  Status AllReduceMin(uint64_t* data, size_t n) override {
    return Check(api_.allreduce_min_u64(data, n, err_));
  }
  Status Gather(const void* send, size_t bytes, void* recv, uint32_t root) override {
    return Check(api_.gather(send, bytes, recv, static_cast<int>(root), err_));
  }
  Status AllGather(const void* send, size_t bytes, void* recv) override {
    return Check(api_.allgather(send, bytes, recv, err_));
  }
  Status AllToAll(const void* send, size_t bytes, void* recv) override {
    return Check(api_.alltoall(send, bytes, recv, err_));
  }
  Status Barrier() override { return Check(api_.barrier(err_)); }
  [[noreturn]] void Abort(int code) override {
    std::fflush(nullptr);
    api_.abort(code);
    std::_Exit(code);  // not reached: the plugin's abort does not return
  }

 private:
  Status Check(int rc) {
    if (rc == 0) return Status::Ok();
    return Status::Aborted("rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " +
                           err_);
  }

  RfMpi api_;
  char err_[RF_MPI_ERROR_BYTES] = "";
};

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// The plugin's file: RINGFEED_MPI_PLUGIN, else libringfeed_mpi.so beside the executable.
std::string PluginPath() {
  if (const char* p = Env("RINGFEED_MPI_PLUGIN")) return p;
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "libringfeed_mpi.so";
  exe[n] = '\0';
  std::string dir(exe);
  dir.resize(dir.rfind('/') + 1);
  return dir + "libringfeed_mpi.so";
}

}  // namespace

std::unique_ptr<World> SingleWorld() { return std::make_unique<OneRank>(); }

std::string DetectLauncher() {
  if (Env("OMPI_COMM_WORLD_SIZE") != nullptr) return "Open MPI";
  if (Env("PMIX_RANK") != nullptr) return "PMIx";
  if (Env("PMI_SIZE") != nullptr || Env("PMI_RANK") != nullptr) return "PMI";
  if (Env("SLURM_PROCID") != nullptr && Env("SLURM_NTASKS") != nullptr &&
      std::strcmp(Env("SLURM_NTASKS"), "1") != 0)
    return "Slurm";
  return "";
}

Result<std::unique_ptr<World>> OpenWorld() {
  const std::string launcher = DetectLauncher();
  if (launcher.empty()) return SingleWorld();
  const std::string path = PluginPath();
  // RTLD_GLOBAL: Open MPI's own components, loaded by libmpi, resolve libmpi's symbols through it.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status::Aborted("started by " + launcher + ", but the MPI plugin " + path +
                           " cannot be loaded: " + (why != nullptr ? why : "unknown reason") +
                           " (is the MPI library it was built against installed?)");
  }
  auto open = reinterpret_cast<RfMpiOpenFn>(dlsym(handle, "rf_mpi_open"));
  if (open == nullptr) {
    return Status::Aborted("the MPI plugin " + path + " has no rf_mpi_open");
  }
  RfMpi api;
  char err[RF_MPI_ERROR_BYTES] = "";
  if (open(&api, err) != 0) return Status::Aborted(std::string("MPI: ") + err);
  if (api.version != RF_MPI_PLUGIN_VERSION) {
    return Status::Aborted("the MPI plugin " + path + " is of another ringfeed (version " +
                           std::to_string(api.version) + ")");
  }
  return std::unique_ptr<World>(std::make_unique<MpiWorld>(api));
}

}  // namespace rf
