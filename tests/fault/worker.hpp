// A worker process: `threads` threads that, until a deadline, pick a random resource, lock it,
// run the critical section and release, recording every step in the process's history file.
//
// The critical section: read u, g and the database clock; sometimes re-enter the lock and compare
// fences; hold for a drawn time (a holder paused here goes stale); the fenced write (v + 1 only
// while max_fence <= our fence); write u = read + 1 (the unfenced read-sleep-write whose lost
// updates expose overlaps); for a leased kind's write hold, g = read + 1 in a guarded transaction
// (fault/guarded_write.hpp; the hold's claim taken at the section's start). Lost-lock signals are
// recorded but not obeyed: the section runs on, so the fence and the guard must do the rejecting.
// With `net` (a run with network faults), the locks' connections go through the process's own
// proxy (fault/net_link.hpp) and the section's statements through a second handle straight to the
// server — except a row lock's, which run inside the lock's transaction. The same second handle
// when the locks go through PgBouncer (--via pgbouncer): to PostgreSQL, around the pooler.
// A read hold of an rw_lock (fault/queue_holder.hpp) only reads: u and the clock first (A), then,
// after the hold, u and the clock again (R). Queued kinds wait 3 L in one attempt of four (else
// 1 s) and record an attempt that gave up (G).
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <random>
#include <filesystem>
#include <string>

#include "fault/config.hpp"

namespace sqllock::fault {

struct worker_args {
  run_config cfg;
  std::string uri;       // the locks' (a proxy's in front of it with `net`)
  std::string data_uri;  // the sections' handle's, when it is not `uri` (--via pgbouncer: the server's)
  std::filesystem::path history;
  std::filesystem::path board_path;
  int slot = 0;
  std::int64_t until_ns = 0;  // CLOCK_MONOTONIC deadline
  bool net = false;           // lock connections through a net_link the nemesis may degrade
};

// Runs the worker; returns the process exit code.
int run_worker(const worker_args& args);

// A section's hold time as in the plan: 90% 0–20 ms, 9% 50–500 ms, 1% 0.5–2 leases.
std::chrono::milliseconds draw_hold(std::mt19937_64& rng, std::chrono::milliseconds lease);

// The history's name of an acquire's exception class (T lines).
const char* error_class(const std::exception& e);

}  // namespace sqllock::fault
