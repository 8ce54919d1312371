// sqllock run: runs a command while holding a lock, like flock(1) across hosts.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <stop_token>
#include <system_error>
#include <thread>
#include <vector>

#include "child.hpp"
#include "cli.hpp"
#include "duration.hpp"
#include "format.hpp"
#include "run_env.hpp"
#include "run_kinds.hpp"
#include "signals.hpp"
#include "sqllock/database.hpp"
#include "sqllock/error.hpp"

extern char** environ;

namespace sqllock::cli {

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr std::string_view kUsage =
    "usage: sqllock run [--db URI] --lock NAME [--lock NAME…] [--table NAME] [--ttl DURATION]\n"
    "                   [--wait DURATION | -n] [-E CODE] [--kind KIND] [--permits N]\n"
    "                   [--shared | --exclusive] [--kill-after DURATION] [--quiet] -- CMD [ARGS…]\n"
    "\n"
    "Runs CMD while holding the lock NAME, like flock(1) across hosts: every host that runs\n"
    "`sqllock run` with the same database, KIND and NAME waits its turn. A table lock's lease is\n"
    "renewed in the background while CMD runs, so CMD may run for longer than the TTL.\n"
    "\n"
    "  --db URI        database URI (default: $SQLLOCK_DB); create the table with `sqllock migrate`\n"
    "  --lock NAME     the lock's name (1–255 bytes of UTF-8). Given several times (at most 64), the\n"
    "                  table locks of all the names are taken together, all or none, holding none\n"
    "                  while waiting (a multi_lock; --kind table only), and each is an ordinary\n"
    "                  table lock: a `run` of one of the names excludes it\n"
    "  --table NAME    lock table name (default: distributed_lock)\n"
    "  --ttl D         lease length: how long a table lock, permit or place in a queue outlives a\n"
    "                  crashed sqllock (default: 30s; --kind table, semaphore, fair and rw only)\n"
    "  -w, --wait D    give up after waiting D for the lock (default: wait as long as it takes)\n"
    "  -n, --nonblock  give up at once if the lock is held elsewhere\n"
    "  -E, --conflict-exit-code CODE\n"
    "                  exit status when the lock was not obtained (0–255, default: 1)\n"
    "  --kind KIND     which lock (default: table); locks of different kinds never exclude each other:\n"
    "                    table     a row with a lease in the lock table; every database\n"
    "                    semaphore one of --permits N permits of the semaphore NAME: up to N\n"
    "                              commands run at once; every database\n"
    "                    fair      a fair lock: waiting commands run in the order they arrived;\n"
    "                              every database\n"
    "                    rw        a read-write lock, --exclusive (the default) or --shared: shared\n"
    "                              commands run together, an exclusive one alone, in arrival order\n"
    "                              (readers that arrive after a waiting writer wait for it);\n"
    "                              every database\n"
    "                    row       SELECT … FOR UPDATE held in a transaction while CMD runs, in\n"
    "                              <table>_rows; PostgreSQL, MySQL/MariaDB\n"
    "                    advisory  a session-level pg_advisory_lock; PostgreSQL only\n"
    "                    named     a GET_LOCK user lock; MySQL/MariaDB only\n"
    "                  A kind the database lacks is a usage error (exit 2). With row, advisory and\n"
    "                  named the server frees the lock as soon as sqllock's connection ends.\n"
    "  --permits N     --kind semaphore: how many may hold it at once (1–10000, default: 1)\n"
    "  --shared, --exclusive\n"
    "                  --kind rw: take the read (shared) or the write (exclusive, default) lock\n"
    "  --kill-after D  when the lock is lost, SIGKILL CMD this long after the SIGTERM (default: 10s;\n"
    "                  0: at once)\n"
    "  -q, --quiet     no message when the lock is not obtained or the wait is interrupted\n"
    "\n"
    "Durations: a number of seconds (10, 0.5) or a number with a unit: 500ms, 30s, 5m, 1h.\n"
    "\n"
    "CMD inherits sqllock's stdin, stdout, stderr and the other descriptors sqllock was started\n"
    "with, but none of its database connections. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to\n"
    "sqllock are passed on to CMD (those from the terminal, such as Ctrl-C, reach CMD directly);\n"
    "sqllock then still waits for CMD to exit before releasing the lock. While sqllock is still\n"
    "waiting for the lock, these signals end the wait: CMD does not run, exit status 128+signal.\n"
    "A fair or rw wait keeps its place in the queue; a signal ends it at once and gives the\n"
    "place back, so those behind it move up.\n"
    "\n"
    "If the lock is lost while CMD runs (a leased lock was not renewed before its lease ran out by\n"
    "sqllock's clock — even while a renewal statement is still under way — or it was released by\n"
    "force; an advisory or named lock's session died), sqllock says so on stderr, sends CMD SIGTERM,\n"
    "then SIGKILL after --kill-after (10 s), and exits 5 whatever CMD's status. A row lock has no\n"
    "loss signal: a connection that breaks while CMD runs shows only when CMD has exited and the\n"
    "transaction cannot commit (then exit 5). Stopping CMD cannot undo a write already on its way:\n"
    "protect the data CMD writes with the fencing token below.\n"
    "\n"
    "Environment of CMD (sqllock's own, with these set; any of them inherited from an outer\n"
    "`sqllock run` is removed first, and a variable the kind has no value for is absent):\n"
    "  SQLLOCK_KIND      the kind: table, semaphore, fair, rw, row, advisory or named\n"
    "  SQLLOCK_NAME      the lock's name (the first --lock)\n"
    "  SQLLOCK_FENCE     its fencing token, a decimal integer that is larger for every later holder\n"
    "                    of the name (table, semaphore: per slot, fair, rw); none for row, advisory,\n"
    "                    named, whose locks have no token\n"
    "  SQLLOCK_LEASE_MS  the lease (--ttl) in milliseconds (table, semaphore, fair, rw)\n"
    "  SQLLOCK_SLOT      --kind semaphore: the permit's slot, 0 … N-1\n"
    "  SQLLOCK_MODE      --kind rw: shared or exclusive\n"
    "  With several --lock also SQLLOCK_NAME_COUNT=n and SQLLOCK_NAME_i, SQLLOCK_FENCE_i (i = 1…n,\n"
    "  in the order given).\n"
    "A fenced write stores the token beside the data and is refused when a larger one is there:\n"
    "  sqllock run --lock report -- sh -c '\n"
    "    n=$(psql \"$DATA\" -tAq -c \"UPDATE report SET body = 42, fence = $SQLLOCK_FENCE\n"
    "                            WHERE id = 1 AND fence <= $SQLLOCK_FENCE RETURNING 1\")\n"
    "    [ \"$n\" = 1 ] || { echo \"fenced out: a later holder wrote\" >&2; exit 1; }'\n"
    "\n"
    "Exit status: CMD's exit status, or 128+N when CMD was killed by signal N; 1 (or -E's CODE)\n"
    "when the lock was not obtained; 2 usage error; 3 database unreachable; 4 lock table missing\n"
    "or from another sqllock version (run `sqllock migrate`); 5 lock lost while CMD ran; 6 other\n"
    "database error; 126 CMD is not executable; 127 CMD was not found.\n";

constexpr auto kStopGrace = 10s;  // between SIGTERM and SIGKILL after the lock was lost (--kill-after)

// How often the supervising loop checks run_lock::holds(): a lease whose local deadline passed
// while its renewal statement hangs may not have signalled the lost token yet.
constexpr auto kHoldsCheck = 100ms;

struct run_options {
  std::string lock;                     // the first --lock
  std::vector<std::string> more_locks;  // the others
  std::string label;                    // how messages name the lock(s)
  std::chrono::milliseconds ttl = 30s;
  std::optional<std::chrono::milliseconds> wait;
  bool nonblock = false;
  int conflict_code = exit_not_obtained;
  bool quiet = false;
  std::chrono::milliseconds kill_after = kStopGrace;
  std::vector<std::string> command;
};

int parse_exit_code(const std::string& text) {
  int v = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0 || v > 255)
    throw usage_error{"invalid --conflict-exit-code '" + text + "': use a number from 0 to 255"};
  return v;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    default: return "a signal";
  }
}

// A pipe another thread writes to so that a poll() here wakes: the lease watchdog when the lock
// is lost (the supervising poll), the waiting thread of a queued kind when its wait ends.
class wake_pipe {
 public:
  wake_pipe() {
    if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  ~wake_pipe() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  wake_pipe(const wake_pipe&) = delete;
  wake_pipe& operator=(const wake_pipe&) = delete;
  // For the locks' on_lost callbacks and other threads: cannot block or throw.
  std::function<void()> callback() const {
    return [fd = fds_[1]] { (void)!::write(fd, "!", 1); };
  }
  int fd() const noexcept { return fds_[0]; }

 private:
  int fds_[2];
};

enum class acquire_outcome { ran, not_obtained, interrupted };

void report_interrupted(const run_options& o, int sig) {
  if (!o.quiet)
    std::cerr << "sqllock: " << signal_name(sig) << " while waiting for " << o.label << "; the command was not run\n";
}

// Kinds that queue (fair, rw) wait inside the library, which keeps their place in the queue:
// repeating try_run would give the place back after every attempt and let later arrivals pass.
// That wait runs on a thread of its own while this one watches for stop signals; a stop signal
// requests a stop of the wait, which gives the place back at once (the statement in flight, if
// any, ends first), and sqllock exits with 128+signal.
acquire_outcome wait_in_queue(run_lock& lock, const locked_body& body, signal_inbox& signals, const run_options& o,
                              int& stop_signal, int& code) {
  const steady::time_point deadline = o.wait ? steady::now() + *o.wait : steady::time_point::max();
  const wake_pipe done;
  std::stop_source stop;
  bool got = false;
  std::exception_ptr failed;
  std::thread waiter([&, notify = done.callback()] {
    try {
      got = lock.wait_turn(deadline, stop.get_token());
    } catch (...) {
      failed = std::current_exception();
    }
    notify();
  });
  while (true) {
    pollfd p[2] = {{signals.fd(), POLLIN, 0}, {done.fd(), POLLIN, 0}};
    ::poll(p, 2, -1);
    if (p[1].revents & POLLIN) break;  // before a signal that came with it: the body checks for one
    if (const auto s = signals.wait_for_stop(0ms)) {
      stop_signal = s->number;
      stop.request_stop();
      break;
    }
  }
  waiter.join();
  if (stop_signal != 0) {
    // Held after all when the turn came with the stop: given back, the command not run. A
    // failure of the stopped wait changes nothing for the caller: the signal ended it.
    if (got && !failed) lock.run_held([](const std::stop_token&) { return 0; });
    return acquire_outcome::interrupted;
  }
  if (failed) std::rethrow_exception(failed);
  if (!got) return acquire_outcome::not_obtained;
  code = lock.run_held(body);
  return acquire_outcome::ran;
}

// Obtains `lock` as the options say and runs `body` under it (its status goes to `code`); a stop
// signal ends the wait at once (`stop_signal`). Waiting polls run_lock::try_run() — one attempt
// without waiting, whatever the kind — with capped, jittered exponential backoff, sleeping on the
// signalfd: the kinds' blocking waits cannot be interrupted, and a timed wait in short slices
// would restart its backoff every slice (dozens of statements a second per waiter). The price: no
// server-side hand-off (NOTIFY, a lock queue), so a waiter starts up to 500 ms after a release.
acquire_outcome acquire(run_lock& lock, const locked_body& body, signal_inbox& signals, const run_options& o,
                        int& stop_signal, int& code) {
  // Without --wait there is no deadline. (A time_point, not an optional one: GCC 12 at -Os reports
  // a false -Wmaybe-uninitialized for std::optional<time_point>.) An attempt's statements end by
  // it + 1 s on a silently cut network.
  const bool bounded = o.wait.has_value();
  const steady::time_point deadline = bounded ? steady::now() + *o.wait : steady::time_point::max();
  auto attempt = [&] {
    const std::optional<int> ran = lock.try_run(body, deadline);
    if (ran) code = *ran;
    return ran.has_value();
  };
  auto stopped = [&](std::chrono::milliseconds timeout) {
    if (auto s = signals.wait_for_stop(timeout)) {
      stop_signal = s->number;
      return true;
    }
    return false;
  };
  if (stopped(0ms)) return acquire_outcome::interrupted;
  if (o.nonblock) return attempt() ? acquire_outcome::ran : acquire_outcome::not_obtained;
  if (lock.queues()) return wait_in_queue(lock, body, signals, o, stop_signal, code);

  std::minstd_rand jitter(std::random_device{}());
  std::chrono::milliseconds delay = 5ms;
  while (true) {
    if (attempt()) return acquire_outcome::ran;
    const auto now = steady::now();
    if (bounded && now >= deadline) return acquire_outcome::not_obtained;
    // Sleep between delay/2 and delay, never past the deadline.
    auto sleep = delay / 2 + std::chrono::milliseconds(jitter() % static_cast<unsigned>(delay.count() / 2 + 1));
    if (bounded) sleep = std::min(sleep, std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
    delay = std::min<std::chrono::milliseconds>(delay * 2, 500ms);
    if (stopped(sleep)) return acquire_outcome::interrupted;
  }
}

// Whether the lock is lost: its lost token was signalled (a failed renewal, a forced release, a
// dead session), or its lease ran past the local deadline (holds() false) — which a renewal
// statement stuck on a dead network might otherwise hold up until TCP gives up.
bool lock_lost(const run_lock& lock, const std::stop_token& lost_token) {
  return lost_token.stop_requested() || !lock.holds();
}

// Waits for the command to exit, passing signals on and stopping it if the lock is lost: SIGTERM at
// once, SIGKILL `kill_after` later. Returns its wait status; sets `lost` when the lock was lost
// meanwhile.
int supervise(pid_t pid, signal_inbox& signals, const wake_pipe& alarm, const run_lock& lock,
              const std::stop_token& lost_token, const run_options& o, bool& lost) {
  // When to SIGKILL a command that ignored SIGTERM; `never` until the lock is lost.
  constexpr auto never = steady::time_point::max();
  steady::time_point kill_at = never;
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "waitpid");

    if (!lost && lock_lost(lock, lost_token)) {
      lost = true;
      std::cerr << "sqllock: " << o.label << " lost while the command was running" << std::endl;
      ::kill(pid, SIGTERM);
      kill_at = steady::now() + o.kill_after;
    }
    if (kill_at != never && steady::now() >= kill_at) {
      ::kill(pid, SIGKILL);
      kill_at = never;
    }

    // Wake for a signal (SIGCHLD included), a lost lock (the on_lost callback writes the alarm
    // pipe), the next holds() check, or the SIGKILL deadline.
    auto timeout = std::chrono::milliseconds(kHoldsCheck);
    if (kill_at != never)
      timeout = std::clamp(std::chrono::ceil<std::chrono::milliseconds>(kill_at - steady::now()), 0ms, timeout);
    pollfd p[2] = {{signals.fd(), POLLIN, 0}, {alarm.fd(), POLLIN, 0}};
    ::poll(p, 2, static_cast<int>(timeout.count()));
    while (auto s = signals.take()) {
      if (s->number == SIGCHLD || s->from_terminal) continue;  // terminal signals reached it already
      ::kill(pid, s->number);
    }
    char drain[16];
    while (::read(alarm.fd(), drain, sizeof drain) > 0) {
    }
  }
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return exit_internal;
}

}  // namespace

int cmd_run(args a) {
  if (a.flag("help", "h")) {
    std::cout << kUsage;
    return exit_ok;
  }
  run_options o;
  o.nonblock = a.flag("nonblock", "n");
  o.quiet = a.flag("quiet", "q");
  const auto lock = a.take("lock");
  std::vector<std::string> more_locks;
  while (auto another = a.take("lock")) more_locks.push_back(std::move(*another));
  const auto table = a.take("table");
  const auto ttl = a.take("ttl");
  const auto wait = a.take("wait", "w");
  const auto conflict = a.take("conflict-exit-code", "E");
  const auto kill_after = a.take("kill-after");
  const auto kind = a.take("kind");
  const auto permits = a.take("permits");
  const bool shared = a.flag("shared");
  const bool exclusive = a.flag("exclusive");
  const std::string uri = database_uri(a);
  o.command = a.rest();
  try {
    a.expect_done();
  } catch (usage_error& e) {
    e.message += " (options go before --, the command and its arguments after it)";
    throw;
  }

  if (!lock) throw usage_error{"--lock NAME is required"};
  o.lock = *lock;
  o.more_locks = std::move(more_locks);
  const run_kind lock_kind = kind ? parse_run_kind(*kind) : run_kind::table;
  if (!o.more_locks.empty() && lock_kind != run_kind::table)
    throw usage_error{"several --lock names need --kind table (they are taken together as one multi_lock); --kind " +
                      *kind + " takes one"};
  const bool leased = lock_kind == run_kind::table || lock_kind == run_kind::semaphore || lock_kind == run_kind::fair ||
                      lock_kind == run_kind::rw;
  if (ttl && !leased) throw usage_error{"--ttl applies to --kind table, semaphore, fair and rw only"};
  if (permits && lock_kind != run_kind::semaphore) throw usage_error{"--permits applies to --kind semaphore only"};
  if ((shared || exclusive) && lock_kind != run_kind::rw)
    throw usage_error{"--shared and --exclusive apply to --kind rw only (a read-write lock); --kind " +
                      kind.value_or("table") + " has one mode"};
  if (shared && exclusive) throw usage_error{"--shared and --exclusive exclude each other"};
  std::int64_t permit_count = 1;
  if (permits) {
    const auto& text = *permits;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), permit_count);
    if (ec != std::errc() || end != text.data() + text.size() || permit_count < 1 || permit_count > 10000)
      throw usage_error{"--permits must be a whole number from 1 to 10000, not '" + text + "'"};
  }
  if (ttl) o.ttl = parse_duration(*ttl, "--ttl");
  if (wait) o.wait = parse_duration(*wait, "--wait");
  if (wait && o.nonblock) throw usage_error{"--wait and --nonblock exclude each other"};
  if (conflict) o.conflict_code = parse_exit_code(*conflict);
  if (kill_after) o.kill_after = parse_duration(*kill_after, "--kill-after");
  if (o.command.empty()) throw usage_error{"no command given: sqllock run --lock NAME -- CMD [ARGS…]"};

  // Before the database is opened: the command inherits only what sqllock was started with, and
  // no thread exists yet that could receive the signals meant for the signalfd.
  command_line command(o.command, open_fds());
  signal_inbox signals;

  database_options db_options;
  if (table) db_options.table = *table;
  database db(uri, db_options);

  wake_pipe alarm;
  const run_lock_settings settings{o.lock, o.more_locks, o.ttl, permit_count, alarm.callback(), shared};
  o.label = run_lock_label(settings);
  const std::unique_ptr<run_lock> lock_of_kind = make_run_lock(lock_kind, db, settings);
  // What the command is told of the lock it runs under (run_env.hpp), once it is held.
  auto env_values = [&](const run_lock& held) {
    run_env_values v;
    v.kind = kind.value_or("table");
    v.names.push_back(o.lock);
    v.names.insert(v.names.end(), o.more_locks.begin(), o.more_locks.end());
    v.fences = held.fences();
    if (leased) v.lease = o.ttl;
    v.slot = held.slot();
    if (lock_kind == run_kind::rw) v.mode = shared ? "shared" : "exclusive";
    return v;
  };

  // Runs under the lock: starts the command and supervises it.
  const locked_body body = [&](const std::stop_token& lost_token) -> int {
    if (auto s = signals.wait_for_stop(0ms)) {  // arrived during the acquiring round trip
      if (!o.quiet)
        std::cerr << "sqllock: " << signal_name(s->number) << " while acquiring " << o.label
                  << "; the command was not run\n";
      return 128 + s->number;
    }
    const start_result started = command.start(signals, command_environment(environ, env_values(*lock_of_kind)));
    if (started.pid < 0) {
      std::cerr << "sqllock: cannot run '" << command.name() << "': " << std::strerror(started.error) << "\n";
      return started.error == ENOENT || started.error == ENOTDIR ? 127 : 126;
    }
    bool lost = false;
    const int status = supervise(started.pid, signals, alarm, *lock_of_kind, lost_token, o, lost);
    if (!lost && lock_lost(*lock_of_kind, lost_token)) {
      lost = true;
      std::cerr << "sqllock: " << o.label << " lost while the command was running\n";
    }
    return lost ? exit_lock_lost : exit_status_of(status);
  };

  int stop_signal = 0;
  int code = 0;
  switch (acquire(*lock_of_kind, body, signals, o, stop_signal, code)) {
    case acquire_outcome::not_obtained:
      if (!o.quiet)
        std::cerr << "sqllock: " << o.label
                  << (o.more_locks.empty() ? " is held elsewhere" : ": at least one is held elsewhere")
                  << (o.wait ? "; gave up after waiting " + *wait : std::string()) << "\n";
      return o.conflict_code;
    case acquire_outcome::interrupted: report_interrupted(o, stop_signal); return 128 + stop_signal;
    case acquire_outcome::ran: break;
  }
  return code;
}

}  // namespace sqllock::cli
