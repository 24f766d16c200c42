// Heartbeats between ranks (distributed/heartbeat.h): where they go, how a wait is judged, and two
// real heartbeat threads talking over loopback in one process.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "distributed/heartbeat.h"

namespace ag::train {
namespace {

uint32_t ip(const char* dotted) {
  in_addr a{};
  inet_pton(AF_INET, dotted, &a);
  return a.s_addr;
}

distributed::HeartbeatAddress address(std::initializer_list<const char*> addrs) {
  distributed::HeartbeatAddress a{};
  for (const char* s : addrs) a.addrs[a.count++] = ip(s);
  a.port = htons(4000);
  return a;
}

TEST(HeartbeatTargets, OneNetworkStackUsesLoopback) {
  const auto a = address({"10.0.0.5", "127.0.0.1"});
  EXPECT_EQ(distributed::heartbeat_targets(a, a), std::vector<uint32_t>{ip("127.0.0.1")});
}

TEST(HeartbeatTargets, AnotherHostGetsItsOwnAddressesButNotOnesThisHostAlsoHolds) {
  // 172.17.0.1 is docker's bridge on both machines: sent there, a beat would come back here.
  const auto self = address({"10.0.0.5", "172.17.0.1", "127.0.0.1"});
  const auto peer = address({"10.0.0.6", "172.17.0.1", "192.168.1.6", "127.0.0.1"});
  EXPECT_EQ(distributed::heartbeat_targets(self, peer), (std::vector<uint32_t>{ip("10.0.0.6"), ip("192.168.1.6")}));
}

TEST(HeartbeatTargets, APeerWithOnlySharedAddressesFallsBackToLoopback) {
  const auto self = address({"172.17.0.1", "127.0.0.1"});
  const auto peer = address({"172.17.0.1", "10.9.9.9", "127.0.0.1"});
  EXPECT_EQ(distributed::heartbeat_targets(self, peer), std::vector<uint32_t>{ip("10.9.9.9")});
  EXPECT_EQ(distributed::heartbeat_targets(self, address({"172.17.0.1"})), std::vector<uint32_t>{ip("127.0.0.1")});
}

distributed::PeerBeat beat(double silent, int64_t waiting, int64_t completed) {
  distributed::PeerBeat b;
  b.silent_s = silent;
  b.heard = true;
  b.waiting_in = waiting;
  b.completed = completed;
  return b;
}

TEST(JudgeWait, APeerSilentForTheTimeoutIsLostWhateverItLastSaid) {
  // Rank 0 waits in collective 7; rank 1 beats (computing), rank 2 was silent 5 s, rank 3 4.9 s.
  const std::vector<distributed::PeerBeat> peers = {beat(99, -1, 0), beat(0.2, -1, 7), beat(5.0, 7, 7), beat(4.9, 7, 7)};
  const distributed::WaitVerdict v = distributed::judge_wait(peers, 0, 7, 5.0);
  EXPECT_EQ(v.silent, std::vector<int>{2});
  EXPECT_FALSE(v.all_arrived);  // rank 1 is still computing
}

TEST(JudgeWait, AllArrivedWhenEveryPeerWaitsHereOrLaterOrHasCompletedIt) {
  // Self (rank 1) waits in 7: rank 0 waits in 7, rank 2 in 9 (it completed 7), rank 3 completed 8.
  std::vector<distributed::PeerBeat> peers = {beat(0.1, 7, 7), beat(0, 0, 0), beat(0.1, 9, 9), beat(0.1, -1, 8)};
  EXPECT_TRUE(distributed::judge_wait(peers, 1, 7, 5.0).all_arrived);
  EXPECT_TRUE(distributed::judge_wait(peers, 1, 7, 5.0).silent.empty());
  peers[3] = beat(0.1, 6, 6);  // still waiting in an earlier one
  EXPECT_FALSE(distributed::judge_wait(peers, 1, 7, 5.0).all_arrived);
  peers[3] = beat(0.1, -1, 7);  // computing, with 7 not yet complete: it has not reached 7
  EXPECT_FALSE(distributed::judge_wait(peers, 1, 7, 5.0).all_arrived);
}

// Polls until pred holds (true) or 5 s pass (false).
bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(Heartbeat, TwoRanksHearEachOtherAndWhatTheyWaitIn) {
  distributed::Heartbeat a(0, 2), b(1, 2);
  const std::vector<distributed::HeartbeatAddress> everyone = {a.local_address(), b.local_address()};
  a.start(everyone, 42, 0.02);
  b.start(everyone, 42, 0.02);
  ASSERT_TRUE(eventually([&] { return a.peer(1).heard && b.peer(0).heard; }));
  b.waiting_in(5);
  ASSERT_TRUE(eventually([&] { return a.peer(1).waiting_in == 5; }));
  b.completed(6);
  ASSERT_TRUE(eventually([&] { return a.peer(1).waiting_in == -1 && a.peer(1).completed == 6; }));
  EXPECT_LT(a.peer(1).silent_s, 1.0);
}

TEST(Heartbeat, ASilentPeerGrowsSilentAndAnotherJobsBeatsDoNotCount) {
  distributed::Heartbeat a(0, 2);
  std::vector<distributed::HeartbeatAddress> everyone = {a.local_address(), {}};
  {
    distributed::Heartbeat b(1, 2);
    everyone[1] = b.local_address();
    a.start(everyone, 42, 0.02);
    b.start(everyone, 42, 0.02);
    ASSERT_TRUE(eventually([&] { return a.peer(1).heard; }));
  }  // b stops beating
  const double before = a.peer(1).silent_s;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GE(a.peer(1).silent_s, before + 0.25);

  distributed::Heartbeat c(0, 2), d(1, 2);  // d beats for job 7, c listens for job 8
  const std::vector<distributed::HeartbeatAddress> cd = {c.local_address(), d.local_address()};
  c.start(cd, 8, 0.02);
  d.start(cd, 7, 0.02);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(c.peer(1).heard);
  EXPECT_GE(c.peer(1).silent_s, 0.25);  // counted from start(): never heard is silence too
}

}  // namespace
}  // namespace ag::train
