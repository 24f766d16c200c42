#include "cli/bench_core_round_trip.h"

#include <atomic>
#include <chrono>
#include <limits>
#include <thread>

namespace ag::cli {

double core_round_trip_ns(int round_trips) {
  const double not_measured = std::numeric_limits<double>::quiet_NaN();
  if (std::thread::hardware_concurrency() < 2 || round_trips < 1) return not_measured;
  using Clock = std::chrono::steady_clock;
  // The ball: odd values are this thread's serves, even ones the partner's returns. alignas
  // keeps it on a line of its own, as the pool's job counters are.
  alignas(64) std::atomic<int> ball{0};
  alignas(64) std::atomic<bool> stop{false};
  std::thread partner([&] {
    for (int seen = 0;;) {
      int v;
      while ((v = ball.load(std::memory_order_acquire)) == seen)
        if (stop.load(std::memory_order_relaxed)) return;
      ball.store(v + 1, std::memory_order_release);
      seen = v + 1;
    }
  });
  // One trip, the value returned before `deadline` (false: the partner was not scheduled).
  auto trip = [&](int serve, Clock::time_point deadline) {
    ball.store(serve, std::memory_order_release);
    for (int spins = 0; ball.load(std::memory_order_acquire) != serve + 1;)
      if (++spins % 1024 == 0 && Clock::now() > deadline) return false;
    return true;
  };
  // A first trip, untimed, that waits for the partner thread to start (up to a second on a busy
  // machine): the timed trips then measure the line's travel, not the thread's creation.
  bool late = !trip(1, Clock::now() + std::chrono::seconds(1));
  const auto start = Clock::now(), deadline = start + std::chrono::milliseconds(50);
  int done = 0;
  for (; !late && done < round_trips; ++done) late = !trip(2 * done + 3, deadline);
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  stop.store(true, std::memory_order_relaxed);
  partner.join();
  return late ? not_measured : ns / done;
}

}  // namespace ag::cli
