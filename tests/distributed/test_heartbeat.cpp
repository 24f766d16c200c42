// Heartbeats between ranks (distributed/heartbeat.h): where they go, how a wait is judged, and two
// real heartbeat threads talking over loopback in one process.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "distributed/heartbeat.h"
#include "distributed/hmac_sha256.h"

namespace ag::train {
namespace {

using namespace ag::distributed;

uint32_t ip(const char* dotted) {
  in_addr a{};
  inet_pton(AF_INET, dotted, &a);
  return a.s_addr;
}

HeartbeatAddress address(std::initializer_list<const char*> addrs) {
  HeartbeatAddress a{};
  for (const char* s : addrs) a.ports[a.count] = htons(4000), a.addrs[a.count++] = ip(s);
  return a;
}

TEST(HeartbeatTargets, OneNetworkStackUsesLoopback) {
  const auto a = address({"10.0.0.5", "127.0.0.1"});
  EXPECT_EQ(heartbeat_targets(a, a), std::vector<uint32_t>{ip("127.0.0.1")});
}

TEST(HeartbeatTargets, AnotherHostGetsItsOwnAddressesButNotOnesThisHostAlsoHolds) {
  // 172.17.0.1 is docker's bridge on both machines: sent there, a beat would come back here.
  const auto self = address({"10.0.0.5", "172.17.0.1", "127.0.0.1"});
  const auto peer = address({"10.0.0.6", "172.17.0.1", "192.168.1.6", "127.0.0.1"});
  EXPECT_EQ(heartbeat_targets(self, peer), (std::vector<uint32_t>{ip("10.0.0.6"), ip("192.168.1.6")}));
}

TEST(HeartbeatTargets, APeerWithOnlySharedAddressesFallsBackToLoopback) {
  const auto self = address({"172.17.0.1", "127.0.0.1"});
  const auto peer = address({"172.17.0.1", "10.9.9.9", "127.0.0.1"});
  EXPECT_EQ(heartbeat_targets(self, peer), std::vector<uint32_t>{ip("10.9.9.9")});
  EXPECT_EQ(heartbeat_targets(self, address({"172.17.0.1"})), std::vector<uint32_t>{ip("127.0.0.1")});
}

PeerBeat beat(double silent, int64_t waiting, int64_t completed) {
  PeerBeat b;
  b.silent_s = silent;
  b.heard = true;
  b.waiting_in = waiting;
  b.completed = completed;
  return b;
}

TEST(JudgeWait, APeerSilentForTheTimeoutIsLostWhateverItLastSaid) {
  // Rank 0 waits in collective 7; rank 1 beats (computing), rank 2 was silent 5 s, rank 3 4.9 s.
  const std::vector<PeerBeat> peers = {beat(99, -1, 0), beat(0.2, -1, 7), beat(5.0, 7, 7), beat(4.9, 7, 7)};
  const WaitVerdict v = judge_wait(peers, 0, 7, 5.0);
  EXPECT_EQ(v.silent, std::vector<int>{2});
  EXPECT_FALSE(v.all_arrived);  // rank 1 is still computing
}

TEST(JudgeWait, AllArrivedWhenEveryPeerWaitsHereOrLaterOrHasCompletedIt) {
  // Self (rank 1) waits in 7: rank 0 waits in 7, rank 2 in 9 (it completed 7), rank 3 completed 8.
  std::vector<PeerBeat> peers = {beat(0.1, 7, 7), beat(0, 0, 0), beat(0.1, 9, 9), beat(0.1, -1, 8)};
  EXPECT_TRUE(judge_wait(peers, 1, 7, 5.0).all_arrived);
  EXPECT_TRUE(judge_wait(peers, 1, 7, 5.0).silent.empty());
  peers[3] = beat(0.1, 6, 6);  // still waiting in an earlier one
  EXPECT_FALSE(judge_wait(peers, 1, 7, 5.0).all_arrived);
  peers[3] = beat(0.1, -1, 7);  // computing, with 7 not yet complete: it has not reached 7
  EXPECT_FALSE(judge_wait(peers, 1, 7, 5.0).all_arrived);
}

// Polls until pred holds (true) or 5 s pass (false).
bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

HeartbeatKey key_of(uint8_t x) {
  HeartbeatKey k{};
  k.fill(x);
  return k;
}

TEST(Heartbeat, TwoRanksHearEachOtherAndWhatTheyWaitIn) {
  Heartbeat a(0, 2), b(1, 2);
  const std::vector<HeartbeatAddress> everyone = {a.local_address(), b.local_address()};
  a.start(everyone, key_of(42), 0.02);
  b.start(everyone, key_of(42), 0.02);
  ASSERT_TRUE(eventually([&] { return a.peer(1).heard && b.peer(0).heard; }));
  b.waiting_in(5);
  ASSERT_TRUE(eventually([&] { return a.peer(1).waiting_in == 5; }));
  b.completed(6);
  ASSERT_TRUE(eventually([&] { return a.peer(1).waiting_in == -1 && a.peer(1).completed == 6; }));
  EXPECT_LT(a.peer(1).silent_s, 1.0);
}

TEST(Heartbeat, ASilentPeerGrowsSilentAndAnotherJobsBeatsDoNotCount) {
  Heartbeat a(0, 2);
  std::vector<HeartbeatAddress> everyone = {a.local_address(), {}};
  {
    Heartbeat b(1, 2);
    everyone[1] = b.local_address();
    a.start(everyone, key_of(42), 0.02);
    b.start(everyone, key_of(42), 0.02);
    ASSERT_TRUE(eventually([&] { return a.peer(1).heard; }));
  }  // b stops beating
  const double before = a.peer(1).silent_s;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GE(a.peer(1).silent_s, before + 0.25);

  Heartbeat c(0, 2), d(1, 2);  // d beats under job 7's key, c listens under job 8's
  const std::vector<HeartbeatAddress> cd = {c.local_address(), d.local_address()};
  c.start(cd, key_of(8), 0.02);
  d.start(cd, key_of(7), 0.02);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(c.peer(1).heard);
  EXPECT_GE(c.peer(1).silent_s, 0.25);  // counted from start(): never heard is silence too
}

std::string hex(const Sha256Digest& d) {
  std::string s;
  char b[3];
  for (uint8_t x : d) std::snprintf(b, sizeof b, "%02x", x), s += b;
  return s;
}

// RFC 4231, test case 2, and SHA-256 of 119 bytes (its padding spills into a second block).
TEST(HmacSha256, RfcVectors) {
  const std::string key = "Jefe", msg = "what do ya want for nothing?";
  EXPECT_EQ(hex(hmac_sha256(key.data(), key.size(), msg.data(), msg.size())),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  const std::string a(119, 'a');
  EXPECT_EQ(hex(sha256(a.data(), a.size())), "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
  EXPECT_EQ(hex(sha256("", 0)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// Issue 34: a host that sees the traffic cannot keep a dead rank alive. Datagrams sent straight
// to a rank's socket: one tagged under another key (a forgery), a valid one, the same one sent
// again and an older one (replays) and a truncated one; only the valid, newer ones count.
TEST(Heartbeat, ForgedReplayedAndMalformedDatagramsAreIgnored) {
  Heartbeat a(0, 2);
  const HeartbeatAddress mine = a.local_address();
  HeartbeatAddress silent = mine;  // rank 1, on this machine, never runs: the test plays it
  for (int i = 0; i < silent.count; ++i) silent.ports[i] = htons(9);
  a.start({mine, silent}, key_of(1), 0.02);
  uint16_t port = 0;
  for (int i = 0; i < mine.count; ++i)
    if (mine.addrs[i] == htonl(INADDR_LOOPBACK)) port = mine.ports[i];
  ASSERT_NE(port, 0);
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET, to.sin_addr.s_addr = htonl(INADDR_LOOPBACK), to.sin_port = port;
  auto send = [&](const void* d, size_t n) {
    ASSERT_EQ(sendto(fd, d, n, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to), static_cast<ssize_t>(n));
  };
  auto counted = [&](int64_t accepted, int64_t ignored) {
    return eventually([&] { return a.datagrams_accepted() == accepted && a.datagrams_ignored() == ignored; });
  };
  const HeartbeatDatagram forged = seal_heartbeat(key_of(2), 1, 2, -1, 0, 100);
  send(&forged, sizeof forged);
  ASSERT_TRUE(counted(0, 1));
  EXPECT_FALSE(a.peer(1).heard);
  const HeartbeatDatagram good = seal_heartbeat(key_of(1), 1, 2, 4, 3, 5);
  send(&good, sizeof good);
  ASSERT_TRUE(counted(1, 1));
  EXPECT_TRUE(a.peer(1).heard);
  EXPECT_EQ(a.peer(1).waiting_in, 4);
  send(&good, sizeof good);  // the same datagram again
  const HeartbeatDatagram older = seal_heartbeat(key_of(1), 1, 2, 9, 9, 4);
  send(&older, sizeof older);
  HeartbeatDatagram edited = good;  // a valid datagram with its sequence number raised
  edited.seq = 6;
  send(&edited, sizeof edited);
  send(&good, sizeof good - 1);
  ASSERT_TRUE(counted(1, 5));
  EXPECT_EQ(a.peer(1).waiting_in, 4);
  close(fd);
}

// A job whose ranks share one machine listens on loopback alone (it used to bind 0.0.0.0);
// before start(), no socket is on the wildcard address either.
TEST(Heartbeat, AJobOnOneMachineListensOnLoopbackOnly) {
  Heartbeat a(0, 2), b(1, 2);
  for (uint32_t x : a.bound_addresses()) EXPECT_NE(x, htonl(INADDR_ANY));
  const std::vector<HeartbeatAddress> everyone = {a.local_address(), b.local_address()};
  a.start(everyone, key_of(3), 0.02);
  b.start(everyone, key_of(3), 0.02);
  EXPECT_EQ(a.bound_addresses(), std::vector<uint32_t>{htonl(INADDR_LOOPBACK)});
  EXPECT_EQ(b.bound_addresses(), std::vector<uint32_t>{htonl(INADDR_LOOPBACK)});
  ASSERT_TRUE(eventually([&] { return a.peer(1).heard && b.peer(0).heard; }));
}

TEST(Heartbeat, TheInterfacesAreTheOnesMpisTcpTransportMayUse) {
  in_addr ten{}, other{};
  inet_pton(AF_INET, "10.1.2.3", &ten);
  inet_pton(AF_INET, "192.168.5.6", &other);
  EXPECT_TRUE(mpi_may_use_interface("eth0", ten.s_addr, nullptr, nullptr));
  EXPECT_TRUE(mpi_may_use_interface("eth0", ten.s_addr, "eth0,eth1", nullptr));
  EXPECT_FALSE(mpi_may_use_interface("docker0", other.s_addr, "eth0, eth1", nullptr));
  EXPECT_TRUE(mpi_may_use_interface("ib0", ten.s_addr, "10.0.0.0/8", nullptr));
  EXPECT_FALSE(mpi_may_use_interface("ib0", other.s_addr, "10.0.0.0/8", nullptr));
  EXPECT_FALSE(mpi_may_use_interface("docker0", other.s_addr, nullptr, "docker0,lo"));
  EXPECT_TRUE(mpi_may_use_interface("eth0", ten.s_addr, nullptr, "192.168.0.0/16"));
}

}  // namespace
}  // namespace ag::train
