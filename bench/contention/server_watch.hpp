// The PostgreSQL server's side of a sqllock_contention run (bench/contention/), read through
// libpqxx connections of its own, independent of sqllock:
//   - over the whole run, from the go to the end of the last client process: the transactions of
//     the clients' database (pg_stat_database xact_commit + xact_rollback; backends report them
//     lazily, so finish() ends the backends still connected to that database — a pooler's server
//     connections — which then report at exit, and waits until the count settles), the transaction
//     ids assigned (write transactions: exact), and the statements (pg_stat_statements, when the
//     server loads it; exact);
//   - during the measured window: the most client connections to that database at once
//     (pg_stat_activity every 100 ms), the latency of an unrelated `SELECT 1` every 20 ms, and the
//     CPU of the server's processes alive at the window's end when the server runs on this
//     machine (/proc; a backend that ended during the window is left out).
// The sampling connections use the database `postgres`, so that their own transactions and
// statements are not counted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sqllock::contention {

struct counter_connection;  // a libpqxx connection (server_watch.cpp)

struct server_figures {
  std::string database;                            // the clients' database
  std::optional<std::int64_t> transactions;        // xact_commit + xact_rollback, whole run
  std::optional<std::int64_t> write_transactions;  // transaction ids assigned, whole run
  std::optional<std::int64_t> statements;          // pg_stat_statements calls, whole run
  std::int64_t peak_connections = -1;              // client backends of that database, most seen
  std::vector<double> select1_ms;                  // one per sample
  std::optional<double> server_cpu_cores;          // postmaster and live children, in the window
  std::string note;                                // what could not be measured, and why
};

class server_watch {
 public:
  // Connects (admin_uri names the clients' database; the samplers connect to `postgres` on the
  // same server, or to admin_uri's own database when that fails). Throws what libpqxx throws.
  explicit server_watch(const std::string& admin_uri);
  ~server_watch();
  server_watch(const server_watch&) = delete;
  server_watch& operator=(const server_watch&) = delete;

  // Reads the whole-run counters now (at the go), then samples from start_ns to end_ns
  // (CLOCK_MONOTONIC) on two threads; returns at once.
  void run(std::int64_t start_ns, std::int64_t end_ns);
  // After the last client process has ended: waits for the samplers and for the transaction
  // count to settle, reads the counters again and gives what was measured.
  server_figures finish();

 private:
  struct counters {
    std::optional<std::int64_t> transactions, xids, statements;
  };
  counters read_counters();

  std::string sampler_uri_;
  std::unique_ptr<counter_connection> conn_;  // the whole-run counters, read on the caller's thread
  bool has_statements_ = false;
  counters at_go_;
  server_figures figures_;     // the window thread writes peak_connections and server_cpu_cores
  std::string note_window_;    // the window thread's failure, if any
  std::string select1_error_;  // the prober thread's failure, if any
  std::jthread window_, prober_;
};

}  // namespace sqllock::contention
