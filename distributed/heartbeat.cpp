#include "distributed/heartbeat.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace ag::distributed {

namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The datagram. Both ends run the same binary on the same kind of machine (MPI's own
// assumption here), so it goes as plain bytes.
struct Beat {
  uint64_t magic;  // kMagic ^ job: a datagram of another job (or anything else) is ignored
  int32_t rank;
  int32_t size;
  int64_t waiting_in;
  int64_t completed;
};
constexpr uint64_t kMagic = 0x6174746f67726164ull;  // "attograd"
}  // namespace

std::string HeartbeatAddress::to_string() const {
  std::string s;
  for (int i = 0; i < count; ++i) {
    char buf[INET_ADDRSTRLEN] = {};
    in_addr a{};
    a.s_addr = addrs[i];
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    s += (i ? ", " : "") + std::string(buf) + ":" + std::to_string(ntohs(port));
  }
  return s.empty() ? "no address" : s;
}

std::vector<uint32_t> heartbeat_targets(const HeartbeatAddress& self, const HeartbeatAddress& peer) {
  const auto holds = [](const HeartbeatAddress& a, uint32_t x) { return std::find(a.addrs, a.addrs + a.count, x) != a.addrs + a.count; };
  const uint32_t loopback = htonl(INADDR_LOOPBACK);
  std::vector<uint32_t> out;
  bool same_stack = self.count == peer.count;
  for (int i = 0; i < peer.count; ++i) {
    const uint32_t a = peer.addrs[i];
    if (!holds(self, a)) same_stack = false;
    if (!holds(self, a) && a != loopback) out.push_back(a);
  }
  if (same_stack || out.empty()) return {loopback};
  return out;
}

WaitVerdict judge_wait(const std::vector<PeerBeat>& peers, int self, int64_t collective, double timeout_s) {
  WaitVerdict v;
  v.all_arrived = true;
  for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
    if (r == self) continue;
    const PeerBeat& p = peers[static_cast<size_t>(r)];
    if (p.silent_s >= timeout_s) v.silent.push_back(r);
    // Collectives are waited for in the order they were started, so a peer waiting in a later
    // one has completed this one.
    if (!(p.waiting_in >= collective || p.completed > collective)) v.all_arrived = false;
  }
  return v;
}

Heartbeat::Heartbeat(int rank, int size) : rank_(rank), size_(size), seen_(new Seen[static_cast<size_t>(size)]) {
  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("heartbeat: cannot open a UDP socket: ") + std::strerror(errno));
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  any.sin_port = 0;
  socklen_t len = sizeof any;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&any), &len) != 0) {
    const std::string why = std::strerror(errno);
    close(fd_);
    throw std::runtime_error("heartbeat: cannot bind a UDP socket: " + why);
  }
  port_ = any.sin_port;
}

Heartbeat::~Heartbeat() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
}

HeartbeatAddress Heartbeat::local_address() const {
  HeartbeatAddress a{};
  a.port = port_;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i && a.count < HeartbeatAddress::kMaxAddrs; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
      if (i->ifa_flags & IFF_LOOPBACK) continue;
      a.addrs[a.count++] = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    }
    freeifaddrs(list);
  }
  if (a.count < HeartbeatAddress::kMaxAddrs) a.addrs[a.count++] = htonl(INADDR_LOOPBACK);
  return a;
}

void Heartbeat::start(const std::vector<HeartbeatAddress>& everyone, uint64_t job, double interval_s) {
  if (thread_.joinable()) return;
  job_ = job;
  const HeartbeatAddress& me = everyone.at(static_cast<size_t>(rank_));
  targets_.assign(static_cast<size_t>(size_), {});
  ports_.assign(static_cast<size_t>(size_), 0);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    targets_[static_cast<size_t>(r)] = heartbeat_targets(me, everyone.at(static_cast<size_t>(r)));
    ports_[static_cast<size_t>(r)] = everyone.at(static_cast<size_t>(r)).port;
  }
  set_interval(interval_s);
  started_ns_ = now_ns();
  thread_ = std::thread([this] { loop(); });
}

void Heartbeat::set_interval(double seconds) {
  interval_ns_ = std::max<int64_t>(10'000'000, static_cast<int64_t>(seconds * 1e9));
  wake_ = true;
}

void Heartbeat::waiting_in(int64_t collective) {
  my_waiting_ = collective;
  wake_ = true;  // the others learn at once that this rank has reached it
}

void Heartbeat::completed(int64_t collectives) {
  my_completed_ = collectives;
  my_waiting_ = -1;
}

PeerBeat Heartbeat::peer(int r) const {
  const Seen& s = seen_[static_cast<size_t>(r)];
  PeerBeat b;
  const int64_t last = s.last_ns.load();
  b.heard = last != 0;
  b.silent_s = static_cast<double>(now_ns() - (last ? last : started_ns_)) * 1e-9;
  b.waiting_in = s.waiting_in.load();
  b.completed = s.completed.load();
  return b;
}

void Heartbeat::send_all() {
  const Beat beat{kMagic ^ job_, rank_, size_, my_waiting_.load(), my_completed_.load()};
  for (int r = 0; r < size_; ++r)
    for (uint32_t a : targets_[static_cast<size_t>(r)]) {
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_addr.s_addr = a;
      to.sin_port = ports_[static_cast<size_t>(r)];
      // Errors (an unreachable address, a full buffer) only mean this beat is lost.
      (void)sendto(fd_, &beat, sizeof beat, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    }
}

void Heartbeat::loop() {
  int64_t next_send = 0;
  while (!stop_) {
    const int64_t now = now_ns();
    if (now >= next_send || wake_.exchange(false)) {
      send_all();
      next_send = now + interval_ns_.load();
    }
    // Wait for a datagram until the next beat is due (at most 50 ms, so that stop_ and wake_
    // are seen soon).
    pollfd p{fd_, POLLIN, 0};
    const int64_t wait_ms = std::clamp<int64_t>((next_send - now_ns()) / 1'000'000, 0, 50);
    if (poll(&p, 1, static_cast<int>(wait_ms)) <= 0) continue;
    Beat b{};
    ssize_t n;
    while ((n = recv(fd_, &b, sizeof b, MSG_DONTWAIT)) >= 0) {
      if (n != static_cast<ssize_t>(sizeof b) || b.magic != (kMagic ^ job_) || b.size != size_ || b.rank < 0 ||
          b.rank >= size_ || b.rank == rank_)
        continue;
      Seen& s = seen_[static_cast<size_t>(b.rank)];
      s.waiting_in = b.waiting_in;
      s.completed = b.completed;
      s.last_ns = now_ns();
    }
  }
}

}  // namespace ag::distributed
