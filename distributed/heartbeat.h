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
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ag::distributed {

// Where a rank listens for heartbeats: the IPv4 addresses it binds (interfaces that are up and
// that MPI's TCP transport may use, OMPI_MCA_btl_tcp_if_include / _exclude; loopback last),
// each with the UDP port the system gave its socket there. Plain bytes, exchanged between the
// ranks with MPI_Allgather.
struct HeartbeatAddress {
  static constexpr int kMaxAddrs = 8;
  uint32_t addrs[kMaxAddrs];  // network byte order
  uint16_t ports[kMaxAddrs];  // network byte order, the port of addrs[i]
  int32_t count;
  std::string to_string() const;  // "10.0.0.2:40123, 127.0.0.1:40124"
};

// The job's secret: heartbeats carry HMAC-SHA256 tags under it (distributed/hmac_sha256.h), never the
// secret itself. Rank 0 draws it (new_heartbeat_key, the system's random source) and sends it
// to the others over MPI, so a host that sees the datagrams cannot forge a live peer.
using HeartbeatKey = std::array<uint8_t, 32>;
HeartbeatKey new_heartbeat_key();

// Whether MPI's TCP transport may use an interface (name, IPv4 address), as OpenMPI decides it
// from btl_tcp_if_include / btl_tcp_if_exclude (comma-separated interface names or CIDR
// blocks; given to mpirun as --mca or OMPI_MCA_ variables). Loopback is always kept apart:
// it serves ranks on one machine. Pure: tested without interfaces.
bool mpi_may_use_interface(const std::string& name, uint32_t addr, const char* include, const char* exclude);

// One heartbeat as it travels (also what tests forge): the sender's state, a sequence number
// that only grows (a copy sent again is ignored) and the tag of all that under the job's key.
struct HeartbeatDatagram {
  uint32_t magic;
  int32_t rank, size, reserved;
  int64_t waiting_in, completed;
  uint64_t seq;
  uint8_t tag[32];  // HMAC-SHA256(key, every byte before it)
};
HeartbeatDatagram seal_heartbeat(const HeartbeatKey& key, int rank, int size, int64_t waiting_in, int64_t completed,
                                 uint64_t seq);
// True when d carries a valid tag under key (and the magic); says nothing of rank or seq.
bool heartbeat_authentic(const HeartbeatKey& key, const HeartbeatDatagram& d);

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
  // Opens a UDP socket on each address MPI may use (mpi_may_use_interface) and on loopback,
  // each on a free port: never on 0.0.0.0. Throws when none can be opened.
  Heartbeat(int rank, int size);
  ~Heartbeat();  // stops the thread, closes the sockets
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  HeartbeatAddress local_address() const;
  // Starts the thread: a heartbeat every `interval_s` to every peer's targets. The sockets on
  // addresses no peer sends to are closed first (a job on one machine keeps loopback alone).
  // Only heartbeats tagged under `key` (rank 0's, the same on every rank), from a rank of this
  // job, newer than the last one of that rank, count.
  void start(const std::vector<HeartbeatAddress>& everyone, const HeartbeatKey& key, double interval_s);
  void set_interval(double seconds);
  // The addresses it listens on now (network byte order).
  std::vector<uint32_t> bound_addresses() const;
  // Datagrams counted and ignored so far (forged, of another job, replayed, malformed).
  int64_t datagrams_accepted() const { return accepted_.load(); }
  int64_t datagrams_ignored() const { return ignored_.load(); }

  // What this rank is doing, sent with every heartbeat (and at once when it starts waiting).
  void waiting_in(int64_t collective);
  void completed(int64_t collectives);  // also: no longer waiting

  PeerBeat peer(int rank) const;

 private:
  void loop();
  void send_all();

  int rank_, size_;
  struct Socket {
    int fd;
    uint32_t addr;  // bound to, network byte order
    uint16_t port;  // network byte order
  };
  std::vector<Socket> sockets_;
  HeartbeatKey key_{};
  struct Target {
    uint32_t addr;
    uint16_t port;
    int from;  // the fd to send from: the socket on the address this peer sends to us at
  };
  std::vector<std::vector<Target>> targets_;  // by rank
  uint64_t seq_ = 0;  // of the last heartbeat sent
  struct Seen {
    std::atomic<int64_t> last_ns{0};  // steady clock; 0: never
    std::atomic<int64_t> waiting_in{-1};
    std::atomic<int64_t> completed{0};
    uint64_t last_seq = 0;  // the loop's thread alone reads and writes it
  };
  std::unique_ptr<Seen[]> seen_;
  std::atomic<int64_t> my_waiting_{-1}, my_completed_{0};
  std::atomic<int64_t> interval_ns_{500'000'000};
  std::atomic<bool> stop_{false}, wake_{false};
  std::atomic<int64_t> accepted_{0}, ignored_{0};
  int64_t started_ns_ = 0;
  std::thread thread_;
};

}  // namespace ag::distributed
