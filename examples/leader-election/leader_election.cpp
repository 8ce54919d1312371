// Leader election for a worker fleet with sqllock::table_lock.
//
//   leader_election URI WORKER SECONDS [LOG_DB] [LOCK]
//
// Every worker of the fleet runs this program with its own WORKER name and the same URI (run
// `sqllock migrate --db URI` once first). Each loops: try to become the leader; while leader, do
// the leader's work — here, append an entry to a log every 200 ms — and stop the moment the lease
// is lost. After SECONDS it steps down and exits 0.
//
// At most one worker holds the lock at a time, and every term gets a fencing token, fence(),
// larger than every earlier term's. A leader that froze past its lease (a long GC pause, a
// stopped VM) may not know yet that it was replaced, so the storage it writes to takes the token
// with every write and refuses one older than the newest it has seen. Here the storage is a SQLite
// file (LOG_DB, default leader_log.db) so that the example runs anywhere; in a real fleet it is a
// table in the database all workers write to, with the same SQL:
//
//   CREATE TABLE leader_fence (id INTEGER PRIMARY KEY CHECK (id = 1), fence BIGINT NOT NULL);
//   INSERT INTO leader_fence VALUES (1, 0);
//   CREATE TABLE leader_log (fence BIGINT NOT NULL, worker TEXT NOT NULL, seq BIGINT NOT NULL,
//                            at_ms BIGINT NOT NULL);
//
//   -- every write, in one transaction:
//   UPDATE leader_fence SET fence = :fence WHERE id = 1 AND fence <= :fence;
//   -- 0 rows updated: a newer leader has written; ROLLBACK and stop. Otherwise:
//   INSERT INTO leader_log (fence, worker, seq, at_ms) VALUES (:fence, :worker, :seq, :now_ms);
//   COMMIT;
//
// The UPDATE locks the one leader_fence row, so concurrent writers take turns, and each one
// compares its token with the newest committed one (PostgreSQL, MySQL and SQLite alike).
//
// Output, one line per event: "worker=W event=leader fence=F", "worker=W event=lost",
// "worker=W event=rejected fence=F", "worker=W event=step_down fence=F writes=N reason=…".
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <variant>

#include <sqllock/error.hpp>
#include <sqllock/table_lock.hpp>

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// How long the fleet is without a leader after the leader dies (renewed every third of it while
// the leader lives). Short, so that the example fails over quickly; 10–30 s suit most fleets.
constexpr auto kLease = 3s;

void say(const std::string& line) { std::cout << line << std::endl; }

// The leader's storage: an append-only log that refuses writes with an outdated fencing token.
class fenced_log {
 public:
  explicit fenced_log(const std::string& path) {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open(path.c_str(), &db);
    db_.reset(db);  // closed by db_, even when opening failed
    if (rc != SQLITE_OK) fail("cannot open " + path);
    sqlite3_busy_timeout(db, 10'000);  // wait for the other workers' writes instead of failing
    exec("BEGIN IMMEDIATE");
    exec("CREATE TABLE IF NOT EXISTS leader_fence (id INTEGER PRIMARY KEY CHECK (id = 1), fence INTEGER NOT NULL)");
    exec("INSERT OR IGNORE INTO leader_fence VALUES (1, 0)");
    exec(
        "CREATE TABLE IF NOT EXISTS leader_log (fence INTEGER NOT NULL, worker TEXT NOT NULL,"
        " seq INTEGER NOT NULL, at_ms INTEGER NOT NULL)");
    exec("COMMIT");
  }

  // Appends (fence, worker, seq, now) unless a write with a larger fence came first.
  bool append(std::int64_t fence, const std::string& worker, std::int64_t seq) {
    exec("BEGIN IMMEDIATE");  // SQLite: take the write lock before reading
    try {
      run("UPDATE leader_fence SET fence = ?1 WHERE id = 1 AND fence <= ?1", {fence});
      if (sqlite3_changes(db_.get()) == 0) {
        exec("ROLLBACK");
        return false;
      }
      const auto now = std::chrono::system_clock::now().time_since_epoch();
      run("INSERT INTO leader_log (fence, worker, seq, at_ms) VALUES (?1, ?2, ?3, ?4)",
          {fence, worker, seq, std::chrono::duration_cast<std::chrono::milliseconds>(now).count()});
      exec("COMMIT");
      return true;
    } catch (...) {
      sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

 private:
  using value = std::variant<std::int64_t, std::string>;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("leader log: " + what + ": " + sqlite3_errmsg(db_.get()));
  }
  void exec(const char* sql) {
    if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql);
  }
  // Runs one statement with ?1, ?2, … bound to `values`.
  void run(const char* sql, std::initializer_list<value> values) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql, -1, &raw, nullptr) != SQLITE_OK) fail(sql);
    const std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> stmt(raw, sqlite3_finalize);
    int i = 0;
    for (const value& v : values) {
      ++i;
      if (const auto* n = std::get_if<std::int64_t>(&v)) {
        sqlite3_bind_int64(raw, i, *n);
      } else {
        const auto& s = std::get<std::string>(v);
        sqlite3_bind_text(raw, i, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
      }
    }
    if (sqlite3_step(raw) != SQLITE_DONE) fail(sql);
  }

  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db_{nullptr, sqlite3_close};
};

// One term as leader: write until the lease is lost or it is time to stop.
void lead(const sqllock::table_lock& leadership, fenced_log& log, const std::string& worker,
          steady::time_point stop_at) {
  const std::int64_t fence = leadership.fence();         // this term's token
  const std::stop_token lost = leadership.lost_token();  // signalled if the lease is lost
  say("worker=" + worker + " event=leader fence=" + std::to_string(fence));

  std::mutex mutex;
  std::condition_variable_any wake;
  std::unique_lock sleeping(mutex);
  std::int64_t writes = 0;
  std::string reason = "done";
  // holds() turns false as soon as the lease may have run out by the local clock; lost_token()
  // when the renewal finds the lock gone (taken over, or deleted with `sqllock release --force`).
  while (steady::now() < stop_at) {
    if (!leadership.holds() || lost.stop_requested()) {
      reason = "lost";
      break;
    }
    if (!log.append(fence, worker, writes + 1)) {  // a newer leader has written: we are stale
      say("worker=" + worker + " event=rejected fence=" + std::to_string(fence));
      reason = "rejected";
      break;
    }
    ++writes;
    // The leader's pace: 200 ms between writes, cut short when the lease is lost.
    wake.wait_for(sleeping, lost, 200ms, [] { return false; });
  }
  say("worker=" + worker + " event=step_down fence=" + std::to_string(fence) + " writes=" + std::to_string(writes) +
      " reason=" + reason);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::cerr << "usage: leader_election URI WORKER SECONDS [LOG_DB] [LOCK]\n";
    return 2;
  }
  const std::string uri = argv[1];
  const std::string worker = argv[2];
  const std::string log_path = argc > 4 ? argv[4] : "leader_log.db";
  const std::string lock_name = argc > 5 ? argv[5] : "fleet-leader";
  try {
    const auto stop_at = steady::now() + std::chrono::seconds(std::stoi(argv[3]));
    sqllock::database db(uri);
    fenced_log log(log_path);
    sqllock::table_lock_options options;
    options.ttl = kLease;
    // Runs on sqllock's renewal thread: keep it short. lead() reacts through lost_token().
    options.on_lost = [worker] { say("worker=" + worker + " event=lost"); };
    sqllock::table_lock leadership(db, lock_name, options);

    while (steady::now() < stop_at) {
      try {
        // Try to become the leader for up to a second (never past stop_at), then look again.
        std::unique_lock leader(leadership, std::min(steady::now() + 1s, stop_at));
        if (leader) lead(leadership, log, worker, stop_at);
      } catch (const sqllock::connection_error& e) {  // the database is away: keep trying
        std::cerr << "worker=" << worker << " event=error error=\"" << e.what() << "\"\n";
        std::this_thread::sleep_for(1s);
      } catch (const sqllock::not_held&) {  // lost even before fence() was read: try again
      }
    }  // a leader's unique_lock released the lock on its way out of the loop
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "leader_election: " << e.what() << "\n";
    return 1;
  }
}
