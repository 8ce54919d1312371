// The multi-lock kind of the fault harness (--kind multi, K = --names-per-set): every worker
// thread, until the deadline, picks a random K-subset of the run's names (resource_name(i), in
// random order), takes it with sqllock::multi_lock::try_lock_for (1 s), runs the table kind's
// critical section on every name of the set (read u, hold, fenced write v + 1 with that name's
// fence, unfenced write u + 1), then sets every name's g = read + 1 in one transaction guarded by
// the set's claim (fault/guarded_write.hpp), and releases the set.
//
// Each attempt uses a fresh owner key, "set-<pid>.<thread>.<n>", so the owner token in the
// server's grant log (session + "/" + key) identifies the attempt: all K grants of one attempt
// carry it and nothing else does (fault/multi_check.hpp groups the log by it).
//
// History: one M line per entered section, written in one write() before anything else:
//   M  <thread> <mono> <set id> -1 <name:fence>…   (the names in the order they were picked)
// then, per name j of the set, the table kind's lines (A, F, U, L, Y, X; history.hpp) under the
// virtual thread number thread * K + j, so that each name's holds form the sequence the common
// checkers expect; A's fourth field is the set id. T lines carry the real thread number.
//
// Negative control sequential-multi (thread 0 of each process): the set taken name by name in the
// picked (unsorted) order, each with its own table_lock::try_lock() under the attempt's owner key
// (autocommit), and on the first refusal the names taken so far released again. Other clients see
// those names held while the rest never were: partial-grant must count such attempts.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "fault/board.hpp"
#include "fault/config.hpp"
#include "fault/history.hpp"
#include "fault/worker.hpp"
#include "sqllock/database.hpp"

namespace sqllock::fault {

// Runs the worker threads of a multi-lock run, the sets taken on `db` and the sections' statements
// run on `data` (fault/worker.hpp), its holds and their planned ends posted on board `b`; returns the
// process exit code.
int run_multi_worker(const worker_args& a, const database& db, const database& data, history_writer& h, board& b);

// The prefix of every attempt's owner key ("set-"): the checker's filter on the grant log.
inline constexpr std::string_view kSetOwnerPrefix = "set-";

}  // namespace sqllock::fault
