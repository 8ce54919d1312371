// The latch kind of the fault harness (--kind latch, N = --latch-count): every worker thread, until
// the deadline, picks one of the run's latches (resource_name(i)) and
//   - reads its state() and writes it to the history (S); an absent or open latch it arms again
//     with try_create(N) (C, when this thread armed the generation);
//   - counts down once as participant "p<pid>.<thread>.<generation>" (the generation it read),
//     retrying the same id after every error — outcome_unknown, connection errors, a server
//     restart — until a reply says counted or not (D; each failed try E). A participant counted
//     twice in one generation would be the library's fault;
//   - waits for the generation it read with wait_for (0–1.5 s) and writes how the wait ended and
//     when (W): an `open` there is a claim that N distinct participants had counted down by then.
// The board's held count is up while a thread is inside a count-down, so crashes and pauses
// prefer processes mid-count-down.
//
// History lines (fence = the generation the thread read):
//   S  state read; fields: open (0|1), initial, count, arrivals (the participants listed)
//   C  this thread's try_create armed the generation (fence)
//   D  count-down finished; fields: counted (1|0|x: latch_not_armed), remaining, attempts, participant
//   E  a count-down try failed and is retried; fields: the exception class, participant
//   W  wait_for returned; fields: open|timed_out|absent, call_ns
//   T  state, try_create or wait failed; fields: the exception class
//
// Negative control rogue-count-down (PostgreSQL; thread 0 of each process): a naive count-down in
// raw SQL — INSERT its arrival row unless present, then, in a separate statement, decrement the
// count — that retries both after an error, and also after a reply it takes as lost (every other
// count-down: the nemesis makes real losses too rare to rely on in 20 s). Its id stays the same,
// the arrival row stays one, the count drops twice: double-count and early-open must see it.
#pragma once

#include <atomic>
#include <chrono>

#include "fault/config.hpp"
#include "fault/history.hpp"
#include "fault/worker.hpp"
#include "sqllock/database.hpp"

namespace sqllock::fault {

// Runs the worker threads of a latch run; returns the process exit code.
int run_latch_worker(const worker_args& a, const database& db, history_writer& h, std::atomic<int>& held);

// The liveness probe: whether latch `name` can still be driven open — armed anew if absent or
// open, then counted down by fresh participants ("probe.<generation>.<k>") until it opens.
// Errors propagate (the caller retries).
bool latch_opens(const database& db, const std::string& name, int count);

}  // namespace sqllock::fault
