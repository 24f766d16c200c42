#include "distributed/comm.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

#include "distributed/heartbeat.h"

#ifdef ATTOGRAD_WITH_MPI
#include <mpi.h>
#endif

namespace ag::distributed {

namespace {
using Clock = std::chrono::steady_clock;

// Heartbeats go out this often without a timeout, and ten times per timeout with one (at
// least every 20 ms): a peer misses ten before it counts as lost.
constexpr double kIdleHeartbeatInterval = 0.5;
double heartbeat_interval(double timeout_s) {
  return timeout_s > 0 ? std::clamp(timeout_s / 10, 0.02, kIdleHeartbeatInterval) : kIdleHeartbeatInterval;
}

// Broadcasts go in pieces of at most this many bytes: each piece is a collective of its own, so
// a long broadcast (a train state over a slow link) shows progress piece by piece to the
// check that every rank has reached a collective that does not complete.
constexpr size_t kBroadcastPieceBytes = size_t{16} << 20;

// The number of ranks the launcher says this process belongs to (1 when not launched by one).
[[maybe_unused]] int launcher_world_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(var);
    if (v && *v) return std::max(1, std::atoi(v));
  }
  return 1;
}

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(var)) return true;
  return false;
}

// Is the process gone (or a zombie waiting to be reaped)?
bool process_dead(int pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}
}  // namespace

struct Comm::Impl {
  struct Peer {
    char host[64];
    int pid;
    HeartbeatKey key;  // rank 0's is the job's secret: heartbeats not tagged under it are ignored
    HeartbeatAddress heartbeat;
  };
  std::vector<Peer> peers;
  int parent_pid = 0;
  bool mpi = false;
  bool finalize = true;  // false after an interrupted run: see skip_finalize_at_exit()
  double timeout_s = 0;  // set_timeout
  std::function<std::string()> where;
  std::unique_ptr<Heartbeat> heartbeat;  // several ranks only
  int64_t started = 0;                    // collectives started: the next one's number
  int64_t completed = 0;                  // collectives waited for (in the order started)
#ifdef ATTOGRAD_WITH_MPI
  MPI_Comm comm = MPI_COMM_NULL;
  struct Pending {
    MPI_Request request;  // MPI_REQUEST_NULL once complete
    int64_t number;       // the collective's number (Impl::started when it began)
  };
  std::vector<Pending> requests;  // by handle
#endif
};

Comm::Comm() : impl_(std::make_unique<Impl>()) {
  Impl::Peer me{};
  std::snprintf(me.host, sizeof me.host, "%s", host_name().c_str());
  me.pid = static_cast<int>(getpid());
  impl_->peers = {me};
  impl_->parent_pid = static_cast<int>(getppid());
}

Comm::~Comm() { shutdown(); }

void Comm::shutdown() {
  if (impl_) impl_->heartbeat.reset();  // its thread ends before MPI does
#ifdef ATTOGRAD_WITH_MPI
  if (impl_ && impl_->mpi && impl_->finalize) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Comm_free(&impl_->comm);
      MPI_Finalize();
    }
  }
#endif
}

namespace {
Comm* g_world = nullptr;  // world(), once called
}  // namespace

void Comm::finish_world() {
  if (g_world) g_world->shutdown();
}

Comm& Comm::single() {
  static Comm c;
  return c;
}

Comm& Comm::world() {
  static Comm& w = []() -> Comm& {
    if (!launched_by_mpi()) return single();
#ifndef ATTOGRAD_WITH_MPI
    const int n = launcher_world_size();
    if (n > 1)
      throw std::runtime_error("started by mpirun as one of " + std::to_string(n) +
                               " ranks, but this attograd was built without MPI (install libopenmpi-dev and "
                               "openmpi-bin, then rebuild)");
    return single();
#else
    static Comm c;
    int provided = 0;
    // Only the main thread calls MPI (the thread pool never does).
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw std::runtime_error("MPI_Init_thread failed");
    c.impl_->mpi = true;
    MPI_Comm_dup(MPI_COMM_WORLD, &c.impl_->comm);
    // Errors come back as codes (and become exceptions) rather than aborting inside MPI.
    MPI_Comm_set_errhandler(c.impl_->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c.impl_->comm, &c.rank_);
    MPI_Comm_size(c.impl_->comm, &c.size_);
    Impl::Peer me = c.impl_->peers[0];
    if (c.size_ > 1) {
      c.impl_->heartbeat = std::make_unique<Heartbeat>(c.rank_, c.size_);
      me.heartbeat = c.impl_->heartbeat->local_address();
      me.key = new_heartbeat_key();  // only rank 0's is used: it reaches the others in the Allgather below
    }
    c.impl_->peers.assign(static_cast<size_t>(c.size_), Impl::Peer{});
    MPI_Allgather(&me, sizeof me, MPI_BYTE, c.impl_->peers.data(), sizeof me, MPI_BYTE, c.impl_->comm);
    MPI_Comm node;
    MPI_Comm_split_type(c.impl_->comm, MPI_COMM_TYPE_SHARED, c.rank_, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &c.local_size_);
    MPI_Comm_free(&node);
    if (c.impl_->heartbeat) {
      std::vector<HeartbeatAddress> addresses;
      for (const Impl::Peer& p : c.impl_->peers) addresses.push_back(p.heartbeat);
      c.impl_->heartbeat->start(addresses, c.impl_->peers[0].key, kIdleHeartbeatInterval);
    }
    return c;
#endif
  }();
  g_world = &w;
  return w;
}

int Comm::threads_per_rank() const {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, static_cast<int>(cores) / local_size_);
}

std::string Comm::describe(int r) const {
  if (r < 0 || r >= static_cast<int>(impl_->peers.size())) return "rank " + std::to_string(r);
  const Impl::Peer& p = impl_->peers[static_cast<size_t>(r)];
  return "rank " + std::to_string(r) + " (pid " + std::to_string(p.pid) + " on " + p.host + ")";
}

void Comm::skip_finalize_at_exit() { impl_->finalize = false; }

void Comm::set_timeout(double seconds, std::function<std::string()> where) {
  if (!(seconds >= 0)) throw std::invalid_argument("Comm::set_timeout: the timeout must be ≥ 0 seconds");
  impl_->timeout_s = seconds;
  impl_->where = std::move(where);
  if (impl_->heartbeat) impl_->heartbeat->set_interval(heartbeat_interval(seconds));
}

double Comm::timeout() const { return impl_->timeout_s; }

double Comm::mpirun_kill_timeout_seconds() const {
  if (!distributed() || !std::getenv("OMPI_COMM_WORLD_SIZE")) return 0;
  const char* v = std::getenv("OMPI_MCA_odls_base_sigkill_timeout");
  return v && *v ? std::atof(v) : 1.0;  // OpenMPI 4.1's default
}

[[noreturn]] void Comm::abort(const std::string& message, int code) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
#ifdef ATTOGRAD_WITH_MPI
  if (impl_->mpi) MPI_Abort(impl_->comm, code);
#endif
  std::_Exit(code);
}

#ifdef ATTOGRAD_WITH_MPI
namespace {
std::string mpi_error(int rc) {
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return msg;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + mpi_error(rc));
}

// "rank 2 (pid 4242 on node3)", "ranks 1 (...) and 3 (...)", "ranks 1 (...), 2 (...) and 3 (...)"
std::string describe_ranks(const Comm& comm, const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "" : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += i + 1 == ranks.size() ? " and " : ", ";
    s += ranks.size() == 1 ? comm.describe(ranks[i]) : comm.describe(ranks[i]).substr(5);  // without "rank "
  }
  return s;
}
}  // namespace

// Waits for collective number `number` (request r) by polling, so that a wait never hangs:
//  - a dead rank on this machine, or a vanished launcher, is noticed within about a second
//    (RankDiedError);
//  - with a timeout, a peer silent for that long, or a collective every rank has reached that
//    makes no progress for that long, ends the wait (PeerLostError), and so does an error MPI
//    reports (a connection it lost).
void Comm::wait_request(void* request, int64_t number, const char* what) {
  MPI_Request& r = *static_cast<MPI_Request*>(request);
  Impl& impl = *impl_;
  if (impl.heartbeat) impl.heartbeat->waiting_in(number);
  const auto t0 = Clock::now();
  double next_check = 1.0, next_liveness = 0.0;
  double all_arrived_since = -1;  // when every peer had reached this collective (seconds after t0; -1: not)
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      if (impl.timeout_s > 0)
        throw PeerLostError(std::string("MPI lost a connection (") + mpi_error(rc) + ") in " + what +
                                (impl.where ? " " + impl.where() : std::string()),
                            {});
      check(rc, what);
    }
    if (done) break;
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    if (waited >= next_check) {
      next_check += 0.5;
      const std::string mine = impl.peers[static_cast<size_t>(rank_)].host;
      for (int p = 0; p < size_; ++p)
        if (p != rank_ && impl.peers[static_cast<size_t>(p)].host == mine &&
            process_dead(impl.peers[static_cast<size_t>(p)].pid))
          throw RankDiedError(describe(p) + " died; " + describe(rank_) + " stopped waiting for it in " + what);
      if (static_cast<int>(getppid()) != impl.parent_pid)
        throw RankDiedError("the launcher (mpirun) of " + describe(rank_) + " is gone");
    }
    if (impl.timeout_s > 0 && impl.heartbeat && waited >= next_liveness) {
      next_liveness = waited + 0.05;
      std::vector<PeerBeat> beats(static_cast<size_t>(size_));
      for (int p = 0; p < size_; ++p)
        if (p != rank_) beats[static_cast<size_t>(p)] = impl.heartbeat->peer(p);
      const WaitVerdict v = judge_wait(beats, rank_, number, impl.timeout_s);
      const auto where = [&] { return impl.where ? " " + impl.where() : std::string(); };  // for messages only
      char limit[64];
      std::snprintf(limit, sizeof limit, " (--comm-timeout %g)", impl.timeout_s);
      if (!v.silent.empty()) {
        const PeerBeat& first = beats[static_cast<size_t>(v.silent[0])];
        char silent[96];
        std::snprintf(silent, sizeof silent, "%.1f s", first.silent_s);
        if (!first.heard)
          throw PeerLostError("no heartbeat ever arrived from " + describe_ranks(*this, v.silent) + " in " + silent +
                              limit + ", waiting in " + what + where() +
                              ". If UDP between the hosts is blocked (a firewall), allow it or turn the check off "
                              "with --comm-timeout 0; " + describe(v.silent[0]) + " listens on " +
                              impl.peers[static_cast<size_t>(v.silent[0])].heartbeat.to_string(),
                              v.silent);
        throw PeerLostError("lost " + describe_ranks(*this, v.silent) + ": no heartbeat for " + silent + limit +
                                " while waiting in " + what + where(),
                            v.silent);
      }
      // Every rank alive and waiting here, and still no completion: the network passes the
      // heartbeats but not MPI's traffic.
      if (!v.all_arrived) all_arrived_since = -1;
      else if (all_arrived_since < 0) all_arrived_since = waited;
      else if (waited - all_arrived_since >= impl.timeout_s) {
        std::vector<int> behind;
        for (int p = 0; p < size_; ++p)
          if (p != rank_ && beats[static_cast<size_t>(p)].completed <= number) behind.push_back(p);
        throw PeerLostError(std::string(what) + " made no progress for " + std::to_string(static_cast<int>(impl.timeout_s)) +
                            " s" + limit + " although every rank is alive and has reached it: MPI's traffic does not "
                            "get through between this rank and " +
                                (behind.empty() ? std::string("the others") : describe_ranks(*this, behind)) + where(),
                            behind);
      }
    }
    if (waited < 0.01) sched_yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  impl.completed = std::max(impl.completed, number + 1);
  if (impl.heartbeat) impl.heartbeat->completed(impl.completed);
}
#endif

void Comm::broadcast(void* data, size_t bytes, int root) {
  if (size_ == 1) return;
#ifdef ATTOGRAD_WITH_MPI
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const int n = static_cast<int>(std::min(bytes, kBroadcastPieceBytes));
    MPI_Request r;
    check(MPI_Ibcast(p, n, MPI_BYTE, root, impl_->comm, &r), "MPI_Ibcast");
    wait_request(&r, impl_->started++, "a broadcast");
    p += n;
    bytes -= static_cast<size_t>(n);
  }
#else
  (void)data, (void)bytes, (void)root;
#endif
}

void Comm::broadcast(std::string& s, int root) {
  if (size_ == 1) return;
  uint64_t n = s.size();
  broadcast(&n, sizeof n, root);
  s.resize(n);
  broadcast(s.data(), n, root);
}

void Comm::broadcast(Tensor& t, int root) {
  if (size_ == 1) return;
  if (!t.is_contiguous()) throw std::invalid_argument("Comm::broadcast: the tensor must be contiguous");
  broadcast(t.raw_data(), static_cast<size_t>(t.numel()) * dtype_size(t.dtype()), root);
}

void Comm::allreduce_sum(double* values, int count) {
  if (size_ == 1) return;
#ifdef ATTOGRAD_WITH_MPI
  MPI_Request r;
  check(MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, impl_->comm, &r), "MPI_Iallreduce");
  wait_request(&r, impl_->started++, "an allreduce");
#else
  (void)values, (void)count;
#endif
}

void Comm::allreduce_sum(float* values, int64_t count) {
  if (size_ == 1) return;
  wait(start_allreduce_sum(values, count));
}

void Comm::barrier() {
  if (size_ == 1) return;
#ifdef ATTOGRAD_WITH_MPI
  MPI_Request r;
  check(MPI_Ibarrier(impl_->comm, &r), "MPI_Ibarrier");
  wait_request(&r, impl_->started++, "a barrier");
#endif
}

int64_t Comm::start_allreduce_sum(float* values, int64_t count) {
  if (size_ == 1) return -1;
#ifdef ATTOGRAD_WITH_MPI
  if (count > INT_MAX) throw std::invalid_argument("Comm::start_allreduce_sum: more than INT_MAX values");
  MPI_Request r;
  check(MPI_Iallreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_FLOAT, MPI_SUM, impl_->comm, &r),
        "MPI_Iallreduce");
  impl_->requests.push_back({r, impl_->started++});
  return static_cast<int64_t>(impl_->requests.size()) - 1;
#else
  (void)values, (void)count;
  return -1;
#endif
}

void Comm::progress() {
#ifdef ATTOGRAD_WITH_MPI
  if (size_ == 1) return;
  // Testing one pending request drives OpenMPI's progress engine for all of them.
  for (Impl::Pending& p : impl_->requests)
    if (p.request != MPI_REQUEST_NULL) {
      int done = 0;
      check(MPI_Test(&p.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      return;
    }
#endif
}

void Comm::wait(int64_t handle) {
  if (size_ == 1 || handle < 0) return;
#ifdef ATTOGRAD_WITH_MPI
  Impl::Pending& p = impl_->requests.at(static_cast<size_t>(handle));
  wait_request(&p.request, p.number, "a gradient allreduce");
  // Every handle waited for: start numbering afresh, so the list never grows.
  if (std::all_of(impl_->requests.begin(), impl_->requests.end(),
                  [](const Impl::Pending& q) { return q.request == MPI_REQUEST_NULL; }))
    impl_->requests.clear();
#endif
}

int run_or_abort_job(const char* command, const std::function<int()>& fn) {
  Comm* comm = nullptr;
  try {
    comm = &Comm::world();
    return fn();
  } catch (const PeerLostError& e) {
    if (!comm || !comm->distributed()) throw;
    // Every rank that can still act sees the loss at about the same time. Rank 0 speaks (and
    // its MPI_Abort makes mpirun end the others within a second or two); the others wait that
    // long first, unless rank 0 is among the ranks they lost.
    const bool root_lost = std::find(e.ranks.begin(), e.ranks.end(), 0) != e.ranks.end();
    if (!comm->is_root()) std::this_thread::sleep_for(std::chrono::milliseconds(root_lost ? 200 : 3000));
    comm->abort(std::string("attograd ") + command + ": peer lost: " + comm->describe(comm->rank()) + ": " + e.what() +
                    "\nattograd " + command + ": ending every rank that can still act (exit status " +
                    std::to_string(kPeerLostStatus) + ": peer lost)",
                kPeerLostStatus);
  } catch (const std::exception& e) {
    if (!comm || !comm->distributed()) throw;
    // When every rank fails alike (a bad flag), let rank 0's message be the one shown.
    if (!comm->is_root()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    comm->abort(std::string("attograd ") + command + ": error: " + comm->describe(comm->rank()) + ": " + e.what() +
                "\nattograd " + command + ": stopping every rank of the job");
  }
}

// ---- Reducer ------------------------------------------------------------------------------------

Reducer::Reducer(Comm& comm, std::vector<Tensor> params, int64_t first_bucket_bytes, int64_t bucket_bytes)
    : comm_(comm), params_(std::move(params)) {
  if (first_bucket_bytes < 4 || bucket_bytes < 4) throw std::invalid_argument("Reducer: bucket sizes must be ≥ 4 bytes");
  const size_t n = params_.size();
  bucket_of_.assign(n, 0);
  offset_in_bucket_.assign(n, 0);
  int64_t filled = 0;  // bytes in the bucket being filled
  for (size_t k = n; k-- > 0;) {  // the last registered parameter first
    const Tensor& p = params_[k];
    if (p.dtype() != DType::Float32)
      throw std::invalid_argument("Reducer: parameter " + std::to_string(k) + " is " + describe(p) +
                                  "; only float32 gradients are averaged");
    const int64_t bytes = p.numel() * 4;
    const int64_t cap = bucket_params_.size() == 1 ? first_bucket_bytes : bucket_bytes;  // of the open bucket
    if (bucket_params_.empty() || (filled > 0 && filled + bytes > cap)) {
      bucket_params_.emplace_back();
      filled = 0;
    }
    bucket_of_[k] = bucket_params_.size() - 1;
    offset_in_bucket_[k] = filled / 4;
    bucket_params_.back().push_back(k);
    filled += bytes;
    total_elems_ += p.numel();
  }
  buffers_.resize(bucket_params_.size());
  for (size_t b = 0; b < bucket_params_.size(); ++b) {
    int64_t elems = 0;
    for (size_t k : bucket_params_[b]) elems += params_[k].numel();
    buffers_[b].assign(static_cast<size_t>(elems), 0.0f);
  }
  handles_.assign(bucket_params_.size(), -1);
  pending_.assign(bucket_params_.size(), 0);
  ready_.assign(n, 0);
}

Reducer::~Reducer() {
  for (HookHandle& h : hooks_) h.remove();
}

void Reducer::attach_hooks() {
  if (!hooks_.empty()) return;
  for (size_t k = 0; k < params_.size(); ++k)
    hooks_.push_back(params_[k].register_post_accumulate_grad_hook([this, k](const Tensor&) {
      if (active_) mark_ready(k);
    }));
}

void Reducer::prepare() {
  if (active_) throw std::logic_error("Reducer::prepare: the previous step was never finished");
  for (size_t b = 0; b < bucket_params_.size(); ++b) pending_[b] = static_cast<int>(bucket_params_[b].size());
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(handles_.begin(), handles_.end(), -1);
  next_launch_ = 0;
  launched_early_ = 0;
  active_ = true;
  if (comm_.distributed()) progress_.emplace([this](const Node&, const Tensor&) { comm_.progress(); });
}

void Reducer::mark_ready(size_t k) {
  if (!active_) throw std::logic_error("Reducer::mark_ready: called outside prepare() ... finish()");
  if (k >= params_.size()) throw std::out_of_range("Reducer::mark_ready: parameter index " + std::to_string(k));
  // A second "final" gradient would mean the first copy sent was not final: a wrong average.
  if (ready_[k])
    throw std::logic_error("Reducer::mark_ready: parameter " + std::to_string(k) +
                           " was marked ready twice in one backward pass");
  ready_[k] = 1;
  --pending_[bucket_of_[k]];
  launch_ready_buckets();
  comm_.progress();
}

void Reducer::launch_ready_buckets() {
  while (next_launch_ < bucket_params_.size() && pending_[next_launch_] == 0) launch(next_launch_++);
}

// Copies the bucket's gradients into its buffer (zeros for a parameter without a gradient)
// and starts the allreduce.
void Reducer::launch(size_t b) {
  float* buf = buffers_[b].data();
  for (size_t k : bucket_params_[b]) {
    float* dst = buf + offset_in_bucket_[k];
    const int64_t n = params_[k].numel();
    const Tensor g = params_[k].grad();
    if (!g.defined()) {
      std::fill(dst, dst + n, 0.0f);
    } else {
      const Tensor gc = g.dtype() == DType::Float32 && g.is_contiguous() ? g : g.to(DType::Float32).contiguous();
      std::copy(gc.data<float>(), gc.data<float>() + n, dst);
    }
  }
  handles_[b] = comm_.start_allreduce_sum(buf, static_cast<int64_t>(buffers_[b].size()));
}

void Reducer::finish() {
  if (!active_) throw std::logic_error("Reducer::finish: called without prepare()");
  launched_early_ = static_cast<int64_t>(next_launch_);
  progress_.reset();
  // Without gradient-ready hooks (or for parameters backward never reached) everything is
  // still pending here: mark it now, in bucket order.
  for (size_t b = 0; b < bucket_params_.size(); ++b)
    for (size_t k : bucket_params_[b])
      if (!ready_[k]) mark_ready(k);
  const auto t0 = Clock::now();
  const float world = static_cast<float>(comm_.size());
  for (size_t b = 0; b < bucket_params_.size(); ++b) {
    comm_.wait(handles_[b]);
    const float* buf = buffers_[b].data();
    for (size_t k : bucket_params_[b]) {
      Tensor& p = params_[k];
      const float* src = buf + offset_in_bucket_[k];
      Tensor g = p.grad();
      if (!g.defined() || g.dtype() != DType::Float32 || !g.is_contiguous()) {
        g = Tensor::zeros(p.shape(), DType::Float32);
        p.set_grad(g);
      }
      float* dst = g.data<float>();
      // The mean over ranks: the sum divided (not multiplied by a rounded 1/N). For one rank
      // the gradient is left exactly as it was.
      if (comm_.size() == 1) std::copy(src, src + g.numel(), dst);
      else
        for (int64_t i = 0, n = g.numel(); i < n; ++i) dst[i] = src[i] / world;
    }
  }
  last_wait_s_ = std::chrono::duration<double>(Clock::now() - t0).count();
  active_ = false;
}

}  // namespace ag::distributed
