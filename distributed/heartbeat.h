// Heartbeats between the ranks of a job, outside MPI: how a rank waiting in a collective tells a
// peer that is merely slow from one that is gone.
//
// A deadline on the collective alone cannot tell them apart: rank 0 writing a checkpoint, a
// slow first step or an evaluation keep the others waiting as long as a dead link does. So every
// rank runs a thread that sends a small UDP datagram to every other rank a few times a second
// and records when each peer's last one arrived. A peer that is computing, or writing a
// checkpoint, keeps beating (the thread runs beside the work); a peer behind a cut link, or a
// stopped or hung process (SIGSTOP stops all its threads), falls silent. torchrun's elastic
// agents use the same idea (keep-alive heartbeats in their rendezvous store).
//
// Each heartbeat also says which collective the sender is waiting in, if any, and how many it
// has completed, so that "every rank is alive and waiting in the same collective, and it does
// not complete" (the network passes the heartbeats but not MPI's traffic) is seen too.
//
// Linux sockets only; no MPI here (distributed/comm.cpp exchanges the addresses and judges).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ag::distributed {

// Where a rank listens for heartbeats: its IPv4 addresses (interfaces that are up, loopback
// last) and its UDP port. Plain bytes, exchanged between the ranks with MPI_Allgather.
struct HeartbeatAddress {
  static constexpr int kMaxAddrs = 8;
  uint32_t addrs[kMaxAddrs];  // network byte order
  int32_t count;
  uint16_t port;  // network byte order
  std::string to_string() const;  // "10.0.0.2:40123, 127.0.0.1:40123"
};

// Where to send a peer's heartbeats: the addresses of `peer` that are not also addresses of
// `self` (an address both hold, such as a docker bridge on every machine, would lead back to
// this machine), or loopback when the two share every address (one network stack). Pure: tested
// without sockets.
std::vector<uint32_t> heartbeat_targets(const HeartbeatAddress& self, const HeartbeatAddress& peer);

// What this rank knows of one peer.
struct PeerBeat {
  double silent_s = 0;       // since its last heartbeat arrived (since start() when none has)
  bool heard = false;        // at least one heartbeat has arrived from it
  int64_t waiting_in = -1;   // the collective it waits in (its number), -1 when it is not waiting
  int64_t completed = 0;     // collectives it has completed
};

// A collective this rank has waited in for a while, judged from its peers' heartbeats (pure:
// tested without a network). `peers` is indexed by rank; the entry of `self` is ignored.
struct WaitVerdict {
  std::vector<int> silent;   // peers not heard from for timeout_s: lost
  bool all_arrived = false;  // every peer waits in this collective (or a later one) or has completed it
};
WaitVerdict judge_wait(const std::vector<PeerBeat>& peers, int self, int64_t collective, double timeout_s);

class Heartbeat {
 public:
  // Opens the UDP socket (all interfaces, a free port). Throws when it cannot.
  Heartbeat(int rank, int size);
  ~Heartbeat();  // stops the thread, closes the socket
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  HeartbeatAddress local_address() const;
  // Starts the thread: a heartbeat every `interval_s` to every peer's targets; only
  // heartbeats carrying `job` (a number every rank got from rank 0) count.
  void start(const std::vector<HeartbeatAddress>& everyone, uint64_t job, double interval_s);
  void set_interval(double seconds);

  // What this rank is doing, sent with every heartbeat (and at once when it starts waiting).
  void waiting_in(int64_t collective);
  void completed(int64_t collectives);  // also: no longer waiting

  PeerBeat peer(int rank) const;

 private:
  void loop();
  void send_all();

  int rank_, size_;
  int fd_ = -1;
  uint64_t job_ = 0;
  std::vector<std::vector<uint32_t>> targets_;  // by rank
  uint16_t port_ = 0;
  std::vector<uint16_t> ports_;  // by rank, network byte order
  struct Seen {
    std::atomic<int64_t> last_ns{0};  // steady clock; 0: never
    std::atomic<int64_t> waiting_in{-1};
    std::atomic<int64_t> completed{0};
  };
  std::unique_ptr<Seen[]> seen_;
  std::atomic<int64_t> my_waiting_{-1}, my_completed_{0};
  std::atomic<int64_t> interval_ns_{500'000'000};
  std::atomic<bool> stop_{false}, wake_{false};
  int64_t started_ns_ = 0;
  std::thread thread_;
};

}  // namespace ag::distributed
