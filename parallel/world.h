// World: the ranks of one data-parallel job and the host-side collectives between them. One
// process is one rank; each trains on its own part of every epoch (pipeline/order/window_order.h)
// with its own GPU, and the ranks meet only in the collectives below and in the gradient reduction
// (dist/host_reducer.h over a World; dist/nccl_reducer.h over NCCL, whose id a World hands out).
//
//   OpenWorld()  a process started by mpirun (Open MPI, or Slurm's srun through PMI/PMIx) joins
//                its job's MPI world through ringfeed's MPI plugin (dist/mpi_plugin.h), which is
//                loaded only then: a process started on its own is a world of one (SingleWorld)
//                and needs no MPI library at all.
//
// Collectives: every rank calls the same ones, with the same sizes, in the same order, from the
// thread that opened the world (MPI_THREAD_FUNNELED). A failure comes back as Status::Aborted
// naming the call and MPI's reason; the job cannot go on (other ranks may be inside the call), so
// the caller reports it and calls Abort.
//
// Failure of a peer: a rank that dies (killed, crashed) makes mpirun end every rank of the job;
// a rank that fails with an error calls Abort, which ends the others (MPI_Abort). Either way no
// rank waits forever in a collective for a peer that is gone.
//
// Ownership: the world is opened once per process and finalized (MPI_Finalize) by its
// destructor, after every collective has returned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace rf {

class World {
 public:
  virtual ~World() = default;

  uint32_t rank() const { return rank_; }
  uint32_t size() const { return size_; }
  // This rank among the ranks on its machine (chooses its GPU), and how many those are.
  uint32_t local_rank() const { return local_rank_; }
  uint32_t local_size() const { return local_size_; }
  // "1 process" or "MPI: Open MPI v4.1.4, ..." for the run's first lines.
  virtual std::string Describe() const = 0;

  // `bytes` at `data` on rank `root` replace those at `data` on every other rank.
  virtual Status Broadcast(void* data, size_t bytes, uint32_t root) = 0;
  // Element-wise over the ranks, the result on every rank.
  virtual Status AllReduceSum(double* data, size_t n) = 0;
  virtual Status AllReduceMax(uint64_t* data, size_t n) = 0;
  virtual Status AllReduceMin(uint64_t* data, size_t n) = 0;
  // Rank r's `bytes` at `send` land at recv + r * bytes on `root` (recv: size() * bytes there;
  // ignored elsewhere).
  virtual Status Gather(const void* send, size_t bytes, void* recv, uint32_t root) = 0;
  // Rank r's `bytes` at `send` land at recv + r * bytes on every rank.
  virtual Status AllGather(const void* send, size_t bytes, void* recv) = 0;
  // send + j * bytes goes to rank j, which receives it at recv + r * bytes (from rank r).
  virtual Status AllToAll(const void* send, size_t bytes, void* recv) = 0;
  virtual Status Barrier() = 0;
  // Ends every rank of the job with exit status `code` (this process included), at once.
  [[noreturn]] virtual void Abort(int code) = 0;

 protected:
  uint32_t rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

// A world of one: collectives copy (AllToAll, AllGather, Gather) or do nothing; Abort exits.
std::unique_ptr<World> SingleWorld();

// How this process was started: the launcher's variables (Open MPI's OMPI_COMM_WORLD_SIZE,
// PMIx's PMIX_RANK, PMI's PMI_SIZE, Slurm's SLURM_PROCID with SLURM_NTASKS) name the launcher
// when one started it; empty when none did.
std::string DetectLauncher();

// The job's world: MPI where DetectLauncher names a launcher, else SingleWorld. Errors: Aborted
// where the MPI plugin cannot be loaded (naming the file and dlerror) or MPI_Init_thread fails.
// The plugin is `libringfeed_mpi.so` beside the running executable, or the file RINGFEED_MPI_PLUGIN
// names.
Result<std::unique_ptr<World>> OpenWorld();

}  // namespace rf
