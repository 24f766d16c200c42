// Data-parallel training across processes with MPI, after the design of PyTorch DDP:
//
//   mpirun -np N attograd train ...
//
// Every rank holds the whole model. Each step, rank r takes its contiguous slice of the global
// batch, runs forward and backward, and the gradients are averaged over the ranks with
// allreduce in buckets of ~1-4 MB of float32 (Reducer). Each bucket's MPI_Iallreduce starts
// as soon as the gradients of all its parameters are final, so communication overlaps the
// rest of backward; the optimizer step waits for all buckets, and then runs identically on
// every rank.
//
// Comm is the communicator. Built without MPI, or run without mpirun, it is a single process
// (rank 0 of 1) whose collectives do nothing, so the trainer has one code path. mpi.h stays
// inside distributed.cpp: no other file needs MPI to compile.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <optional>

#include "autograd/engine.h"
#include "autograd/tensor.h"

namespace ag::distributed {

class Comm {
 public:
  // The process's communicator. The first call initialises MPI when this process was started
  // by mpirun/mpiexec (its environment says so) and MPI was built in; otherwise it is a single
  // process. Throws when mpirun started several ranks but MPI was not built in (they would
  // otherwise each train alone and overwrite each other's files).
  static Comm& world();
  // A single-process communicator, whatever the environment (for tests and tools).
  static Comm& single();
  // What world()'s destructor does at exit (its heartbeat thread stopped, then MPI_Finalize,
  // unless skip_finalize_at_exit), done now, for a program that ends with _Exit (cli/main.cpp:
  // exit() could hang in OpenBLAS's destructor). Nothing when world() was never called.
  static void finish_world();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  bool distributed() const { return size_ > 1; }
  // Ranks on this machine, and the threads each should use by default: the cores shared out
  // among them (all cores for a single process).
  int local_size() const { return local_size_; }
  int threads_per_rank() const;
  // "rank 1 (pid 4242 on node7)": how errors name a rank.
  std::string describe(int rank) const;

  // Blocking collectives. They wait by polling, watching the other ranks on this machine: when
  // one of them has died, the wait throws RankDiedError naming it instead of hanging; with a
  // timeout (set_timeout), a lost peer anywhere throws PeerLostError.
  void broadcast(void* data, size_t bytes, int root = 0);
  void broadcast(std::string& s, int root = 0);
  void broadcast(Tensor& t, int root = 0);  // contiguous; in place
  void allreduce_sum(double* values, int count);
  void allreduce_sum(float* values, int64_t count);
  void barrier();

  // Non-blocking in-place sum of float32 values; returns a handle for wait(). Handles must be
  // waited for in the order they were started (every rank starts collectives in the same order).
  int64_t start_allreduce_sum(float* values, int64_t count);
  void progress();  // lets MPI advance started operations (OpenMPI has no progress thread)
  void wait(int64_t handle);

  // A collective that cannot complete because a peer is lost throws PeerLostError instead of
  // waiting forever: a peer is lost when no heartbeat has come from it for `seconds` (its link
  // is cut, its host is gone, or the process is stopped or hung; distributed/heartbeat.h), or when
  // every rank has reached the collective and it makes no progress for that long. A slow peer
  // (a first step, an evaluation, rank 0 writing a checkpoint) keeps sending heartbeats, so
  // it never trips this. `where` says what the job was doing ("at iter 1234 ..."), for the
  // message. 0 seconds: wait forever. See CommTimeout.
  void set_timeout(double seconds, std::function<std::string()> where = {});
  double timeout() const;

  // Ends every rank of the job with `code` after printing `message` (MPI_Abort); a single
  // process just exits. Never returns.
  [[noreturn]] void abort(const std::string& message, int code = 1);

  // After a stop on SIGINT/SIGTERM, once every rank has passed the stop's last barrier: this
  // process will leave the job without MPI_Finalize. When the signal went to mpirun, mpirun is
  // busy killing the job (it sleeps odls_base_sigkill_timeout seconds between its SIGTERM and
  // its SIGKILL) and cannot answer Finalize's handshake, so Finalize would wait for the SIGKILL.
  // mpirun takes a non-zero exit without Finalize as the end of the job, as it should.
  void skip_finalize_at_exit();
  // When OpenMPI's mpirun started the job: the seconds mpirun leaves the ranks between its
  // SIGTERM and its SIGKILL after a Ctrl-C or SIGTERM to mpirun (odls_base_sigkill_timeout:
  // 1 unless given with --mca or OMPI_MCA_*, which mpirun passes on); 0 for one process or
  // another launcher.
  double mpirun_kill_timeout_seconds() const;

  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  struct Impl;

 private:
  Comm();
  void shutdown();  // the destructor's work (heartbeat thread, MPI_Finalize); idempotent
  // Waits for the MPI_Request* `request`, collective number `number` (see the .cpp).
  void wait_request(void* request, int64_t number, const char* what);
  int rank_ = 0, size_ = 1, local_size_ = 1;
  std::unique_ptr<Impl> impl_;
};

struct RankDiedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A peer was lost (Comm::set_timeout): the job ends with kPeerLostStatus.
struct PeerLostError : std::runtime_error {
  PeerLostError(const std::string& what, std::vector<int> lost) : std::runtime_error(what), ranks(std::move(lost)) {}
  std::vector<int> ranks;  // the ranks this one lost (empty: not known which)
};
// The exit status of a job that lost a peer: 75 is EX_TEMPFAIL of sysexits.h ("a temporary
// failure; the user is invited to retry"), which is what it is: the run folder keeps its last
// checkpoint, and scripts/elastic-train resumes it on the hosts that remain.
constexpr int kPeerLostStatus = 75;

// Comm::set_timeout for as long as it lives (the callback may refer to its owner).
class CommTimeout {
 public:
  CommTimeout(Comm& comm, double seconds, std::function<std::string()> where) : comm_(comm) {
    comm_.set_timeout(seconds, std::move(where));
  }
  ~CommTimeout() { comm_.set_timeout(0); }
  CommTimeout(const CommTimeout&) = delete;
  CommTimeout& operator=(const CommTimeout&) = delete;

 private:
  Comm& comm_;
};

// Runs fn. When it throws in a job of several ranks, prints the error naming this rank and
// aborts the whole job (the other ranks would otherwise wait forever in a collective), with
// status 1, or kPeerLostStatus for a PeerLostError.
int run_or_abort_job(const char* command, const std::function<int()>& fn);

// Averages the gradients of a fixed list of float32 parameters over the ranks, bucket by
// bucket, as they become final during backward.
//
//   reducer.prepare();                 // before the backward that communicates
//   ... backward: reducer.mark_ready(i) once each parameter's gradient is final (attach_hooks()
//       makes the engine's post-accumulate-grad hooks do it) ...
//   reducer.finish();                  // launches what is left, waits, .grad = mean over ranks
//
// Buckets are filled from the last registered parameter to the first (backward produces the
// last layers' gradients first), the first bucket up to first_bucket_bytes (it starts early),
// the others up to bucket_bytes. Both default to 1 MB: the default model's 3.2 MB of
// gradients then make 4 buckets, and the first 3 can start while backward still runs (the
// last one holds the token embedding, tied to the head, whose gradient is complete only at the
// very end); with 4 MB buckets it is 2, and only the first can overlap anything. Buckets are launched strictly in index order, so all ranks
// issue the same collectives in the same order even when their gradients become ready in a
// different order.
class Reducer {
 public:
  static constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;  // 1 MB
  static constexpr int64_t kBucketBytes = int64_t{1} << 20;       // 1 MB

  Reducer(Comm& comm, std::vector<Tensor> params, int64_t first_bucket_bytes = kFirstBucketBytes,
          int64_t bucket_bytes = kBucketBytes);
  ~Reducer();  // removes the hooks
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Registers a post-accumulate-grad hook on every parameter that calls mark_ready(i) during
  // a backward between prepare() and finish() (and does nothing in other backward passes,
  // such as the micro-batches of gradient accumulation that do not communicate).
  void attach_hooks();

  void prepare();
  void mark_ready(size_t param_index);
  void finish();

  // Layout (for tests and reports): the parameter indices of each bucket, in bucket order.
  const std::vector<std::vector<size_t>>& buckets() const { return bucket_params_; }
  int64_t bytes_per_step() const { return total_elems_ * 4; }

  // Timing of the last finish(): seconds spent waiting for buckets after backward had ended
  // (communication not hidden behind backward).
  double last_wait_seconds() const { return last_wait_s_; }
  // Buckets launched before finish() was called (i.e. during backward) in the last step.
  int64_t last_launched_early() const { return launched_early_; }

 private:
  void launch_ready_buckets();
  void launch(size_t b);

  Comm& comm_;
  std::vector<Tensor> params_;
  std::vector<std::vector<size_t>> bucket_params_;
  std::vector<size_t> bucket_of_;        // param index -> bucket
  std::vector<int64_t> offset_in_bucket_;  // param index -> element offset in its bucket
  std::vector<std::vector<float>> buffers_;
  std::vector<int64_t> handles_;
  std::vector<int> pending_;             // per bucket: parameters not yet ready
  std::vector<char> ready_;              // per parameter, this step
  size_t next_launch_ = 0;
  bool active_ = false;
  int64_t total_elems_ = 0;
  double last_wait_s_ = 0;
  int64_t launched_early_ = 0;
  std::vector<HookHandle> hooks_;
  // Between prepare() and finish(): lets MPI progress at every node of the backward pass, so
  // a started bucket keeps moving while backward computes (OpenMPI has no progress thread).
  std::optional<ObserveNodeGradsGuard> progress_;
};

}  // namespace ag::distributed
