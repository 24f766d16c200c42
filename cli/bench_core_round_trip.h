// `bench train`'s reading of where the machine placed its two busiest threads: how long a
// cache line takes to go from one thread to another and back. On the 2-vCPU Zen 4 VMs of
// bench/README.md it reads either about 40-120 ns (the two vCPUs share an L3) or about 330 ns
// (they do not), switching within a process, and the default model's step follows it
// (16.1–16.6 ms against 20.3–20.7 at bf16): every pool hand-off and every line one thread
// writes and the other then reads or writes pays it. Each round of `bench train` records it,
// so that a round's ratio can be read with the placement it ran on.
#pragma once

namespace ag::cli {

// The mean round trip, in nanoseconds, of a value passed between this thread and a second one
// spinning on the same cache line, over `round_trips` trips. NaN where there is only one CPU
// (the second thread would have to be scheduled in for every trip: the figure would be the
// scheduler's), or when the trips take over 50 ms (the second thread was not running beside
// this one); the second thread's start is not timed.
double core_round_trip_ns(int round_trips = 20000);

}  // namespace ag::cli
