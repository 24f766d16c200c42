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
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

#include "distributed/hmac_sha256.h"

namespace ag::distributed {

namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr uint32_t kMagic = 0x61746862;  // "athb"
static_assert(sizeof(HeartbeatDatagram) == 72 && offsetof(HeartbeatDatagram, tag) == 40, "the datagram has no padding");

// "a,b,c" as its parts, without blanks.
std::vector<std::string> split_list(const char* list) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* c = list; c && *c; ++c) {
    if (*c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (*c != ' ') {
      cur += *c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Whether an entry of an include/exclude list ("eth0", "10.0.0.0/8") names the interface.
bool matches(const std::string& entry, const std::string& name, uint32_t addr) {
  const auto slash = entry.find('/');
  if (slash == std::string::npos) return entry == name;
  in_addr net{};
  if (inet_pton(AF_INET, entry.substr(0, slash).c_str(), &net) != 1) return false;
  const int bits = std::atoi(entry.c_str() + slash + 1);
  if (bits <= 0) return bits == 0;
  const uint32_t mask = bits >= 32 ? 0xffffffffu : ~(0xffffffffu >> bits);
  return (ntohl(addr) & mask) == (ntohl(net.s_addr) & mask);
}
}  // namespace

HeartbeatKey new_heartbeat_key() {
  std::random_device rd;
  HeartbeatKey k{};
  for (size_t i = 0; i < k.size(); i += 4) {
    const uint32_t x = rd();
    std::memcpy(k.data() + i, &x, 4);
  }
  return k;
}

bool mpi_may_use_interface(const std::string& name, uint32_t addr, const char* include, const char* exclude) {
  const auto in = split_list(include), out = split_list(exclude);
  if (!in.empty()) return std::any_of(in.begin(), in.end(), [&](const std::string& e) { return matches(e, name, addr); });
  return std::none_of(out.begin(), out.end(), [&](const std::string& e) { return matches(e, name, addr); });
}

HeartbeatDatagram seal_heartbeat(const HeartbeatKey& key, int rank, int size, int64_t waiting_in, int64_t completed,
                                 uint64_t seq) {
  HeartbeatDatagram d{};
  d.magic = kMagic, d.rank = rank, d.size = size, d.waiting_in = waiting_in, d.completed = completed, d.seq = seq;
  const Sha256Digest t = hmac_sha256(key.data(), key.size(), &d, offsetof(HeartbeatDatagram, tag));
  std::memcpy(d.tag, t.data(), sizeof d.tag);
  return d;
}

bool heartbeat_authentic(const HeartbeatKey& key, const HeartbeatDatagram& d) {
  if (d.magic != kMagic) return false;
  const Sha256Digest t = hmac_sha256(key.data(), key.size(), &d, offsetof(HeartbeatDatagram, tag));
  return digests_equal(t.data(), d.tag, sizeof d.tag);
}

std::string HeartbeatAddress::to_string() const {
  std::string s;
  for (int i = 0; i < count; ++i) {
    char buf[INET_ADDRSTRLEN] = {};
    in_addr a{};
    a.s_addr = addrs[i];
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    s += (i ? ", " : "") + std::string(buf) + ":" + std::to_string(ntohs(ports[i]));
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
  // The addresses MPI may use (its own include/exclude lists), loopback last: one socket each.
  std::vector<uint32_t> addrs;
  ifaddrs* list = nullptr;
  const char* include = std::getenv("OMPI_MCA_btl_tcp_if_include");
  const char* exclude = std::getenv("OMPI_MCA_btl_tcp_if_exclude");
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i && addrs.size() + 1 < HeartbeatAddress::kMaxAddrs; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
      if (i->ifa_flags & IFF_LOOPBACK) continue;
      const uint32_t a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
      if (mpi_may_use_interface(i->ifa_name, a, include, exclude) && std::find(addrs.begin(), addrs.end(), a) == addrs.end())
        addrs.push_back(a);
    }
    freeifaddrs(list);
  }
  addrs.push_back(htonl(INADDR_LOOPBACK));
  std::string why;
  for (uint32_t a : addrs) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      why = std::string("cannot open a UDP socket: ") + std::strerror(errno);
      continue;
    }
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = a;
    at.sin_port = 0;
    socklen_t len = sizeof at;
    if (bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&at), &len) != 0) {
      why = std::string("cannot bind a UDP socket: ") + std::strerror(errno);
      close(fd);
      continue;
    }
    sockets_.push_back({fd, a, at.sin_port});
  }
  if (sockets_.empty()) throw std::runtime_error("heartbeat: " + why);
}

Heartbeat::~Heartbeat() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  for (const Socket& s : sockets_) close(s.fd);
}

HeartbeatAddress Heartbeat::local_address() const {
  HeartbeatAddress a{};
  for (const Socket& s : sockets_) {
    if (a.count >= HeartbeatAddress::kMaxAddrs) break;
    a.addrs[a.count] = s.addr;
    a.ports[a.count] = s.port;
    ++a.count;
  }
  return a;
}

std::vector<uint32_t> Heartbeat::bound_addresses() const {
  std::vector<uint32_t> out;
  for (const Socket& s : sockets_) out.push_back(s.addr);
  return out;
}

void Heartbeat::start(const std::vector<HeartbeatAddress>& everyone, const HeartbeatKey& key, double interval_s) {
  if (thread_.joinable()) return;
  key_ = key;
  const HeartbeatAddress& me = everyone.at(static_cast<size_t>(rank_));
  // The addresses the peers will send to: the sockets elsewhere are closed.
  std::vector<uint32_t> used;
  for (int r = 0; r < size_; ++r)
    if (r != rank_)
      for (uint32_t a : heartbeat_targets(everyone.at(static_cast<size_t>(r)), me))
        if (std::find(used.begin(), used.end(), a) == used.end()) used.push_back(a);
  std::vector<Socket> kept;
  for (const Socket& s : sockets_) {
    if (std::find(used.begin(), used.end(), s.addr) != used.end()) kept.push_back(s);
    else close(s.fd);
  }
  sockets_ = kept;
  auto fd_on = [&](uint32_t a) {
    for (const Socket& s : sockets_)
      if (s.addr == a) return s.fd;
    return sockets_.empty() ? -1 : sockets_.front().fd;
  };
  targets_.assign(static_cast<size_t>(size_), {});
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const HeartbeatAddress& peer = everyone.at(static_cast<size_t>(r));
    // Sent from one of the addresses this peer sends to us at (the route back is the route
    // there): the one with the longest prefix in common with the target, its network's.
    const std::vector<uint32_t> back = heartbeat_targets(peer, me);
    auto common_bits = [](uint32_t x, uint32_t y) {
      const uint32_t d = ntohl(x) ^ ntohl(y);
      return d == 0 ? 32 : __builtin_clz(d);
    };
    for (uint32_t a : heartbeat_targets(me, peer)) {
      uint32_t src = back.empty() ? htonl(INADDR_LOOPBACK) : back.front();
      for (uint32_t b : back)
        if (common_bits(b, a) > common_bits(src, a)) src = b;
      for (int i = 0; i < peer.count; ++i)
        if (peer.addrs[i] == a) targets_[static_cast<size_t>(r)].push_back({a, peer.ports[i], fd_on(src)});
    }
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
  const HeartbeatDatagram beat = seal_heartbeat(key_, rank_, size_, my_waiting_.load(), my_completed_.load(), ++seq_);
  for (int r = 0; r < size_; ++r)
    for (const Target& t : targets_[static_cast<size_t>(r)]) {
      if (t.from < 0) continue;
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_addr.s_addr = t.addr;
      to.sin_port = t.port;
      // Errors (an unreachable address, a full buffer) only mean this beat is lost.
      (void)sendto(t.from, &beat, sizeof beat, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    }
}

void Heartbeat::loop() {
  int64_t next_send = 0;
  std::vector<pollfd> polls;
  for (const Socket& s : sockets_) polls.push_back({s.fd, POLLIN, 0});
  while (!stop_) {
    const int64_t now = now_ns();
    if (now >= next_send || wake_.exchange(false)) {
      send_all();
      next_send = now + interval_ns_.load();
    }
    // Wait for a datagram until the next beat is due (at most 50 ms, so that stop_ and wake_
    // are seen soon).
    const int64_t wait_ms = std::clamp<int64_t>((next_send - now_ns()) / 1'000'000, 0, 50);
    if (poll(polls.data(), polls.size(), static_cast<int>(wait_ms)) <= 0) continue;
    for (const pollfd& p : polls) {
      if (!(p.revents & POLLIN)) continue;
      HeartbeatDatagram b{};
      ssize_t n;
      while ((n = recv(p.fd, &b, sizeof b, MSG_DONTWAIT)) >= 0) {
        // A datagram counts when it is whole, tagged under the job's key, from another rank of
        // this job, and newer than that rank's last (a recorded one sent again is ignored).
        if (n != static_cast<ssize_t>(sizeof b) || b.size != size_ || b.rank < 0 || b.rank >= size_ || b.rank == rank_ ||
            !heartbeat_authentic(key_, b)) {
          ++ignored_;
          continue;
        }
        Seen& s = seen_[static_cast<size_t>(b.rank)];
        if (b.seq <= s.last_seq) {
          ++ignored_;
          continue;
        }
        ++accepted_;
        s.last_seq = b.seq;
        s.waiting_in = b.waiting_in;
        s.completed = b.completed;
        s.last_ns = now_ns();
      }
    }
  }
}

}  // namespace ag::distributed
