// Several processes training one model together: TensorFlow's workers (MultiWorkerMirroredStrategy,
// TF_CONFIG's cluster and task), MPI's ranks. Each worker is a process with its own devices; the
// workers sum one buffer each (the gradients, already summed over the worker's devices), share
// the initial variables of worker 0, and compare what must be equal.
//
// This is the seam: core/ trains with a WorkerGroup* and knows nothing of MPI. The MPI group
// (virtualgpu/mpi/, built when MPI is found) and, on GPUs, NCCL across processes implement it;
// app/ makes one when mpirun started the process.
//
// Every method but the accessors is collective: every worker calls it, in the same order, from
// one thread at a time (never two at once in one process).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace mirrorlab::vgpu {

class Device;

// Where a worker runs.
struct WorkerPlace {
  std::string host;
  std::int64_t pid = 0;
};

class WorkerGroup {
 public:
  virtual ~WorkerGroup() = default;

  virtual int rank() const = 0;  // this worker: 0 .. size() - 1 (TF_CONFIG's task index)
  virtual int size() const = 0;  // how many workers
  virtual const std::vector<WorkerPlace>& places() const = 0;  // indexed by rank
  // How the workers move data, in words: "MPI_Allreduce (Open MPI v4.1.4)".
  virtual std::string transport() const = 0;

  // In-place sums over the workers, of host memory.
  virtual void all_reduce_sum(std::span<float> values) = 0;
  virtual void all_reduce_sum(std::span<double> values) = 0;
  // The same for a buffer of `holder` (a device of this worker): host memory is summed in place;
  // device memory goes through a host copy here (a group on GPUs may sum it where it is).
  virtual void all_reduce_sum(std::span<float> values, Device& holder);
  // Every worker's `values` := root's.
  virtual void broadcast(std::span<float> values, int root) = 0;
  // Every worker's text, indexed by rank, on every worker.
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
  // Worker `root`'s `text` on every worker (the others' `text` is not read). For a worker that
  // follows another (`mpirun mirrorlab gui`: worker 0's window says when to step, and may stay
  // paused for an hour): it waits however long it takes, asleep rather than busy where the
  // transport allows, and no timeout applies. The default is a gather.
  virtual std::string wait_for_text(const std::string& text, int root);

  // What this worker is doing now ("training step 12"), for the sentence that says where a run
  // stopped when a worker is lost. Not collective; any thread.
  virtual void set_activity(std::string activity) = 0;
};

// "worker 1 (pid 4242 on vm)".
std::string describe_worker(const WorkerGroup& workers, int rank);

// Whether any worker of the group asks (`mine` is this worker's answer): collective, every
// worker calls it at the same point. Without a group (nullptr), `mine`.
bool any_worker_asks(WorkerGroup* workers, bool mine);

// TF_CONFIG as seed note 002 writes it, for this worker: the cluster's worker addresses (each
// worker's host:20000 + index, the note's ports) and the task,
// {"cluster":{"worker":["vm:20000","vm:20001"]},"task":{"type":"worker","index":1}}.
std::string tf_config(const WorkerGroup& workers);
// The same for worker `rank` of the group (any worker can say another's).
std::string tf_config(const WorkerGroup& workers, int rank);

// How many processes the launcher started this one among (mpirun's OMPI_COMM_WORLD_SIZE, or
// PMI_SIZE of MPICH's and Slurm's launchers), and its rank among them; 0 and 0 when no launcher
// started it. Read from the environment: it works in a build without MPI, to say what is missing.
struct Launch {
  int world_size = 0;
  int rank = 0;
  std::string launcher;  // "mpirun (Open MPI)", "a PMI launcher (MPICH, Slurm)", or ""
};
Launch launched_by();

}  // namespace mirrorlab::vgpu
