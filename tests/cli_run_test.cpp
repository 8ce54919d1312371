// `sqllock run` as a program: exit codes, contention, signals, lost leases, descriptors. Each case
// runs the real CLI (SQLLOCK_CLI) as processes against every driver × dialect pair.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sqllock/database.hpp"
#include "support/client_sessions.hpp"
#include "support/dead_port.hpp"
#include "support/fresh_database.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/time_scale.hpp"

extern char** environ;

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Exit statuses as the tests compare them: the exit code, or 1000+N when killed by signal N (so
// that sqllock's own "128+N" is never confused with sqllock itself being killed).
int code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status); }

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls `ready` every 20 ms for up to `timeout`; returns whether it became true.
bool eventually(const std::function<bool()>& ready, std::chrono::milliseconds timeout = 20s) {
  const auto until = steady::now() + timeout;
  while (!ready()) {
    if (steady::now() >= until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// One run of the CLI. stdin is /dev/null, stdout and stderr go to files; the process starts with
// descriptors 0–2 only (plus `fd3` as descriptor 3 when given) and default signal handling.
class cli_process {
 public:
  cli_process(const std::vector<std::string>& args, const fs::path& dir, int fd3 = -1) {
    static int counter = 0;
    const int n = counter++;
    out_ = dir / ("out." + std::to_string(n));
    err_ = dir / ("err." + std::to_string(n));
    std::vector<std::string> argv_s{SQLLOCK_CLI};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd3 >= 0) posix_spawn_file_actions_adddup2(&fa, fd3, 3);
    posix_spawn_file_actions_addclosefrom_np(&fa, fd3 >= 0 ? 4 : 3);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const int rc = posix_spawn(&pid_, argv[0], &fa, &attr, argv.data(), environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      pid_ = -1;
      ADD_FAILURE() << "cannot start " << SQLLOCK_CLI << ": " << std::strerror(rc);
    }
  }
  ~cli_process() {
    if (running()) {  // a failed test must not leave a process behind
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  cli_process(const cli_process&) = delete;
  cli_process& operator=(const cli_process&) = delete;

  pid_t pid() const { return pid_; }

  // Still running (not yet reaped by wait / running())?
  bool running() {
    if (pid_ < 0 || status_) return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      status_ = st;
      return false;
    }
    return true;
  }

  // Waits for the exit (SIGKILL after `timeout`, which fails the test) and returns code_of().
  int wait(std::chrono::milliseconds timeout = 60s) {
    if (!eventually([&] { return !running(); }, timeout)) {
      ADD_FAILURE() << "sqllock did not exit within " << timeout.count() << " ms; killing it. stderr: " << err();
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
      status_ = st;
    }
    return status_ ? code_of(*status_) : -1;
  }

  // True once the signals sqllock reads synchronously are blocked, i.e. it is past its start-up
  // and a SIGTERM is handled by sqllock rather than by the default action.
  bool blocks_sigterm() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("SigBlk:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (SIGTERM - 1)) & 1;
    return false;
  }

  std::string out() const { return read_file(out_); }
  std::string err() const { return read_file(err_); }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  fs::path out_, err_;
};

// Runs the CLI to completion; returns code_of() and keeps stderr in `err`.
int run_cli(const std::vector<std::string>& args, const fs::path& dir, std::string* err = nullptr) {
  cli_process p(args, dir);
  const int code = p.wait();
  if (err) *err = p.err();
  return code;
}

// A shell snippet that waits (up to 60 s) until `file` exists.
std::string wait_for_file_sh(const fs::path& file) {
  return "i=0; while [ ! -e '" + file.string() + "' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done";
}

// `sh -c SCRIPT` as a command.
std::vector<std::string> sh_cmd(const std::string& script) { return {"sh", "-c", script}; }

// A command for the signal and lost-lock cases, with its files in `dir`: it writes its pid to
// `pid`, traps a signal (writing the signal's name to `got` and exiting), creates `ready` and
// then waits (up to 60 s) for `release` to exist.
struct trapping_command {
  explicit trapping_command(const fs::path& dir)
      : pid(dir / "cmd.pid"), got(dir / "cmd.got"), ready(dir / "cmd.ready"), release(dir / "cmd.release") {}

  // The command line: on signal `sig` (a name without SIG, e.g. "TERM") it exits `code`.
  std::vector<std::string> argv(const std::string& sig, int code) const {
    return sh_cmd("echo $$ > '" + pid.string() + "'; trap 'echo " + sig + " > \"" + got.string() + "\"; exit " +
                  std::to_string(code) + "' " + sig + "; touch '" + ready.string() + "'; " + wait_for_file_sh(release));
  }
  // Waits until the command run by `p` is ready (its trap is set); false when `p` exited first.
  bool started(cli_process& p) const {
    return eventually([&] { return fs::exists(ready) || !p.running(); }) && p.running();
  }
  void let_it_exit() const { std::ofstream(release).put('\n'); }
  // Whether the command's process still exists.
  bool alive() const { return ::kill(std::stoi(read_file(pid)), 0) == 0; }

  fs::path pid, got, ready, release;
};

// The places in the wait queue of the lock table `table` on `uri` (fair and read-write locks).
std::int64_t queue_places(const std::string& uri, const std::string& table) {
  database_options o;
  o.table = table;
  database db(uri, o);
  return std::stoll(sql(db, "SELECT COUNT(*) FROM " + table + "_queue").rows.at(0).at(0).value());
}

class CliRunTest : public ::testing::TestWithParam<target> {
 protected:
  void SetUp() override {
    if (GetParam().uri.empty()) {
      if (servers_required()) FAIL() << "test server for " << GetParam().name << " not configured";
      GTEST_SKIP() << "test server not configured";
    }
    dir_ = make_temp_dir("sqllock-cli");
    table_ = unique_name("cli");
    std::string err;
    ASSERT_EQ(run_cli({"migrate", "--db", GetParam().owner_uri, "--table", table_}, dir_, &err), 0) << err;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // `sqllock run --db … --table … --lock LOCK OPTIONS… -- COMMAND…`
  std::vector<std::string> run_args(const std::string& lock, std::vector<std::string> options,
                                    std::vector<std::string> command) const {
    std::vector<std::string> a{"run", "--db", GetParam().uri, "--table", table_, "--lock", lock};
    a.insert(a.end(), options.begin(), options.end());
    a.push_back("--");
    a.insert(a.end(), command.begin(), command.end());
    return a;
  }
  int run(const std::string& lock, std::vector<std::string> options, std::vector<std::string> command,
          std::string* err = nullptr) const {
    return run_cli(run_args(lock, std::move(options), std::move(command)), dir_, err);
  }
  // `sh -c SCRIPT` as a command.
  static std::vector<std::string> sh(const std::string& script) { return {"sh", "-c", script}; }

  database open() const {
    database_options o;
    o.table = table_;
    return database(GetParam().uri, o);
  }
  std::int64_t rows() const {
    auto db = open();
    return std::stoll(sql(db, "SELECT COUNT(*) FROM " + table_).rows.at(0).at(0).value());
  }

  // Starts a holder of `lock` whose command signals `ready` and holds until `release` exists.
  std::unique_ptr<cli_process> start_holder(const std::string& lock, const fs::path& ready, const fs::path& release,
                                            const std::string& then = "true") const {
    auto p = std::make_unique<cli_process>(
        run_args(lock, {}, sh("touch '" + ready.string() + "'; " + wait_for_file_sh(release) + "; " + then)), dir_);
    EXPECT_TRUE(eventually([&] { return fs::exists(ready) || !p->running(); })) << "holder never started";
    EXPECT_TRUE(fs::exists(ready)) << "holder exited early: " << p->err();
    return p;
  }

  fs::path dir_;
  std::string table_;
};

TEST_P(CliRunTest, ExitStatusIsTheCommands) {
  EXPECT_EQ(run("codes", {}, {"true"}), 0);
  EXPECT_EQ(run("codes", {}, sh("exit 3")), 3);
  EXPECT_EQ(run("codes", {}, sh("exit 42")), 42);
  EXPECT_EQ(run("codes", {}, sh("kill -KILL $$")), 128 + SIGKILL) << "a command killed by signal N gives 128+N";
  EXPECT_EQ(run("codes", {}, sh("kill -TERM $$")), 128 + SIGTERM) << "sqllock forwards nothing; sh died of it";
  EXPECT_EQ(rows(), 0) << "every run released its lock";
}

TEST_P(CliRunTest, CommandRunsWithTheArgumentsGivenAfterTheDashes) {
  const auto file = dir_ / "args";
  EXPECT_EQ(run("args", {}, {"sh", "-c", "printf '%s|' \"$@\" > '" + file.string() + "'", "sh", "-n", "--", "a b"}), 0);
  EXPECT_EQ(read_file(file), "-n|--|a b|") << "options after -- belong to the command";
}

TEST_P(CliRunTest, ContentionGivesUpOrWaitsItsTurn) {
  const auto ready = dir_ / "ready", release = dir_ / "release", order = dir_ / "order";
  auto holder = start_holder("busy", ready, release, "echo holder $(date +%s%N) >> '" + order.string() + "'");

  auto t0 = steady::now();
  std::string err;
  EXPECT_EQ(run("busy", {"-n"}, {"true"}, &err), 1) << err;
  EXPECT_LT(steady::now() - t0, scaled(2s)) << "-n does not wait";
  EXPECT_NE(err.find("held elsewhere"), std::string::npos) << err;
  EXPECT_EQ(run("busy", {"--nonblock", "--quiet"}, {"true"}, &err), 1);
  EXPECT_EQ(err, "") << "--quiet silences the conflict message";

  EXPECT_EQ(run("busy", {"-E", "7", "-n"}, {"true"}), 7);
  EXPECT_EQ(run("busy", {"--conflict-exit-code=0", "-n"}, {"sh", "-c", "exit 9"}), 0) << "the command did not run";

  t0 = steady::now();
  EXPECT_EQ(run("busy", {"--wait", "300ms"}, {"true"}), 1);
  EXPECT_GE(steady::now() - t0, 300ms) << "--wait waits before giving up";
  EXPECT_EQ(run("busy", {"-w", "0.2", "-E", "8"}, {"true"}), 8);

  // A plain waiter runs once the holder is done: its line comes after the holder's.
  cli_process waiter(run_args("busy", {}, sh("echo waiter $(date +%s%N) >> '" + order.string() + "'")), dir_);
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(waiter.running()) << "the waiter waits while the lock is held: " << waiter.err();
  EXPECT_FALSE(fs::exists(order));
  std::ofstream(release).put('x');
  EXPECT_EQ(holder->wait(), 0) << holder->err();
  EXPECT_EQ(waiter.wait(), 0) << waiter.err();

  std::istringstream lines(read_file(order));
  std::string who1, who2;
  long long t1 = 0, t2 = 0;
  lines >> who1 >> t1 >> who2 >> t2;
  EXPECT_EQ(who1, "holder");
  EXPECT_EQ(who2, "waiter");
  EXPECT_LE(t1, t2);
  EXPECT_EQ(rows(), 0);
}

TEST_P(CliRunTest, ASemaphoreRunsUpToNCommandsAtOnce) {
  const std::vector<std::string> two{"--kind", "semaphore", "--permits", "2"};
  std::vector<std::unique_ptr<cli_process>> holders;
  for (int i = 0; i < 2; ++i) {
    const auto ready = dir_ / ("ready" + std::to_string(i));
    holders.push_back(std::make_unique<cli_process>(
        run_args("encoder", two, sh("touch '" + ready.string() + "'; " + wait_for_file_sh(dir_ / "release"))), dir_));
    EXPECT_TRUE(eventually([&] { return fs::exists(ready) || !holders.back()->running(); }));
    ASSERT_TRUE(fs::exists(ready)) << "permit " << i << " was not granted: " << holders.back()->err();
  }
  std::string err;
  auto third = two;
  third.push_back("-n");
  EXPECT_EQ(run("encoder", third, {"true"}, &err), 1) << "a third command while both permits are held: " << err;
  EXPECT_EQ(run("encoder", {"-n"}, {"true"}), 0) << "a table lock of the same name is another kind";
  EXPECT_EQ(run("encoder", {"--permits", "2", "-n"}, {"true"}, &err), 2) << "--permits needs --kind semaphore";
  EXPECT_EQ(run("encoder", {"--kind", "semaphore", "--permits", "0", "-n"}, {"true"}, &err), 2) << err;
  std::ofstream(dir_ / "release").put('x');
  for (auto& h : holders) EXPECT_EQ(h->wait(), 0) << h->err();
  EXPECT_EQ(run("encoder", third, {"true"}), 0) << "the permits came back";
}

TEST_P(CliRunTest, ReadWriteRunsShareTheLockWhenSharedAndWaitWhenExclusive) {
  const std::vector<std::string> shared{"--kind", "rw", "--shared"};
  std::vector<std::unique_ptr<cli_process>> readers;
  for (int i = 0; i < 2; ++i) {
    const auto ready = dir_ / ("ready" + std::to_string(i));
    const auto command = sh("touch '" + ready.string() + "'; " + wait_for_file_sh(dir_ / "release"));
    readers.push_back(std::make_unique<cli_process>(run_args("catalog", shared, command), dir_));
    EXPECT_TRUE(eventually([&] { return fs::exists(ready) || !readers.back()->running(); }));
    ASSERT_TRUE(fs::exists(ready)) << "shared run " << i << " did not run: " << readers.back()->err();
  }
  std::string err;
  EXPECT_EQ(run("catalog", {"--kind", "rw", "-n"}, {"true"}, &err), 1) << "exclusive (the default) while two share it";
  EXPECT_NE(err.find("held elsewhere"), std::string::npos) << err;
  EXPECT_EQ(run("catalog", {"--kind", "rw", "--exclusive", "-n"}, {"true"}, &err), 1) << err;
  auto third = shared;
  third.push_back("-n");
  EXPECT_EQ(run("catalog", third, {"true"}, &err), 0) << "a third shared run joins them: " << err;

  // An exclusive run waits for the two; a shared run that comes after it waits for it.
  const auto wrote = dir_ / "wrote";
  cli_process writer(run_args("catalog", {"--kind", "rw", "--exclusive"}, sh("touch '" + wrote.string() + "'")), dir_);
  ASSERT_TRUE(eventually([&] { return queue_places(GetParam().uri, table_) == 3 || !writer.running(); }))
      << writer.err();
  EXPECT_EQ(run("catalog", third, {"true"}, &err), 1) << "no writer starvation: " << err;
  EXPECT_EQ(run("catalog", {"-n"}, {"true"}, &err), 0) << "a table lock of the name is another lock: " << err;
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(writer.running()) << writer.err();
  EXPECT_FALSE(fs::exists(wrote));
  std::ofstream(dir_ / "release").put('x');
  for (auto& r : readers) EXPECT_EQ(r->wait(), 0) << r->err();
  EXPECT_EQ(writer.wait(), 0) << writer.err();
  EXPECT_TRUE(fs::exists(wrote));
  EXPECT_EQ(queue_places(GetParam().uri, table_), 0) << "every run left the queue";
}

TEST_P(CliRunTest, SigtermIsForwardedAndTheLockReleasedAfterTheCommandExits) {
  const trapping_command cmd(dir_);
  cli_process p(run_args("sig", {}, cmd.argv("TERM", 9)), dir_);
  ASSERT_TRUE(cmd.started(p)) << p.err();
  ::kill(p.pid(), SIGTERM);
  EXPECT_EQ(p.wait(), 9) << "sqllock exits with the command's status: " << p.err();
  EXPECT_EQ(read_file(cmd.got), "TERM\n") << "the command received the SIGTERM";
  EXPECT_EQ(run("sig", {"-n"}, {"true"}), 0) << "the lock was released";
}

TEST_P(CliRunTest, SignalWhileWaitingEndsTheWaitWithoutRunningTheCommand) {
  const auto ready = dir_ / "ready", release = dir_ / "release", ran = dir_ / "ran";
  auto holder = start_holder("wait", ready, release);
  for (int sig : {SIGTERM, SIGINT}) {
    cli_process waiter(run_args("wait", {}, sh("touch '" + ran.string() + "'")), dir_);
    ASSERT_TRUE(eventually([&] { return waiter.blocks_sigterm() || !waiter.running(); }));
    std::this_thread::sleep_for(300ms);  // into the waiting loop
    ASSERT_TRUE(waiter.running()) << waiter.err();
    ::kill(waiter.pid(), sig);
    EXPECT_EQ(waiter.wait(5s), 128 + sig) << waiter.err();
    EXPECT_NE(waiter.err().find("while waiting for lock 'wait'"), std::string::npos) << waiter.err();
    EXPECT_FALSE(fs::exists(ran)) << "the command must not run";
  }
  std::ofstream(release).put('x');
  EXPECT_EQ(holder->wait(), 0);
  EXPECT_EQ(rows(), 0);
}

TEST_P(CliRunTest, UnmigratedTableIsASchemaError) {
  std::string err;
  EXPECT_EQ(run_cli({"run", "--db", GetParam().uri, "--table", unique_name("nomig"), "--lock", "x", "--", "true"}, dir_,
                    &err),
            4)
      << err;
  EXPECT_NE(err.find("sqllock migrate"), std::string::npos) << "the message says what to do: " << err;
}

TEST_P(CliRunTest, ExecFailuresGive127And126AndReleaseTheLock) {
  std::string err;
  EXPECT_EQ(run("exec", {}, {"sqllock-no-such-command-xyz"}, &err), 127);
  EXPECT_NE(err.find("cannot run 'sqllock-no-such-command-xyz'"), std::string::npos) << err;
  EXPECT_EQ(run("exec", {}, {(dir_ / "missing").string()}), 127);
  const auto plain = dir_ / "not-executable";
  std::ofstream(plain) << "echo hi\n";
  ::chmod(plain.c_str(), 0644);
  EXPECT_EQ(run("exec", {}, {plain.string()}, &err), 126) << err;
  EXPECT_EQ(run("exec", {}, {dir_.string()}), 126) << "a directory cannot be run";
  // A script without #! runs through /bin/sh, as with execvp.
  const auto script = dir_ / "script";
  std::ofstream(script) << "exit 4\n";
  ::chmod(script.c_str(), 0755);
  EXPECT_EQ(run("exec", {}, {script.string()}), 4);
  EXPECT_EQ(rows(), 0) << "the lock was released after each failure";
}

TEST_P(CliRunTest, TheCommandInheritsSqllocksDescriptorsButNoDatabaseConnection) {
  const auto marker = dir_ / "marker", pidfile = dir_ / "pid";
  const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  cli_process p(run_args("fds", {}, sh("echo $$ > '" + pidfile.string() + "'; exec sleep 30")), dir_, fd);
  ::close(fd);
  // Wait until the command is sleep itself, then list its descriptors.
  std::string pid;
  ASSERT_TRUE(eventually([&] {
    pid = read_file(pidfile);
    if (pid.empty() || pid.back() != '\n') return false;
    pid.pop_back();
    return read_file("/proc/" + pid + "/cmdline").rfind("sleep", 0) == 0;
  })) << p.err();
  // sleep's own start-up (the dynamic loader, locale files) briefly holds descriptors: retry.
  const std::vector<int> expected{0, 1, 2, 3};
  std::vector<int> fds;
  std::string links;
  eventually(
      [&] {
        fds.clear();
        links.clear();
        std::error_code ec;
        for (const auto& e : fs::directory_iterator("/proc/" + pid + "/fd", ec)) {
          fds.push_back(std::stoi(e.path().filename().string()));
          std::error_code gone;  // closed since the listing
          links += " " + e.path().filename().string() + "->" + fs::read_symlink(e.path(), gone).string();
        }
        std::sort(fds.begin(), fds.end());
        return fds == expected;
      },
      3s);
  EXPECT_EQ(fds, expected) << "0-2 and the descriptor sqllock was started with; none of sqllock's "
                              "connections or pipes:"
                           << links;
  EXPECT_EQ(fs::read_symlink("/proc/" + pid + "/fd/3"), marker);

  ::kill(p.pid(), SIGTERM);
  EXPECT_EQ(p.wait(), 128 + SIGTERM) << "forwarded SIGTERM killed sleep: " << p.err();
}

TEST_P(CliRunTest, LostLockStopsTheCommandAndExits5) {
  const trapping_command cmd(dir_);
  cli_process p(run_args("lost", {"--ttl", "1s"}, cmd.argv("TERM", 0)), dir_);
  ASSERT_TRUE(cmd.started(p)) << p.err();
  {
    auto db = open();
    EXPECT_EQ(sql(db, "DELETE FROM " + table_ + " WHERE resource = $1", {std::string("lost")}).affected, 1u);
  }
  const auto t0 = steady::now();
  EXPECT_EQ(p.wait(10s), 5) << "exit_lock_lost although the command exited 0: " << p.err();
  EXPECT_LT(steady::now() - t0, 5s);
  EXPECT_NE(p.err().find("sqllock: lock 'lost' lost while the command was running"), std::string::npos) << p.err();
  EXPECT_EQ(read_file(cmd.got), "TERM\n") << "the command was sent SIGTERM";
  EXPECT_FALSE(cmd.alive()) << "the command is gone";
}

INSTANTIATE_TEST_SUITE_P(AllTargets, CliRunTest, ::testing::ValuesIn(all_targets()),
                         [](const auto& info) { return info.param.name; });

// ---- --kind row | advisory | named | fair | rw: each kind on the dialects that have it.
struct kind_case {
  target db;
  std::string kind;
};
void PrintTo(const kind_case& c, std::ostream* os) { *os << c.kind << "_" << c.db.name; }

// The dialects each kind exists on (table: all of them, tested above).
bool kind_supported(const std::string& kind, dialect_kind d) {
  if (kind == "advisory") return d == dialect_kind::postgresql;
  if (kind == "named") return d == dialect_kind::mysql;
  if (kind == "row") return d != dialect_kind::sqlite;
  return true;  // fair, rw
}

// Kinds held by sqllock's database session, without a lease; the others (fair, rw) queue.
bool session_kind(const std::string& kind) { return kind == "row" || kind == "advisory" || kind == "named"; }

// The cases of the kinds (of those `among` selects) that the targets' dialects have, or lack.
std::vector<kind_case> kind_cases(bool supported, const std::function<bool(const std::string&)>& among = {}) {
  std::vector<kind_case> out;
  for (const auto& t : all_targets())
    for (const std::string kind : {"row", "advisory", "named", "fair", "rw"})
      if (kind_supported(kind, t.dialect) == supported && (!among || among(kind))) out.push_back({t, kind});
  return out;
}

std::string kind_case_name(const ::testing::TestParamInfo<kind_case>& info) {
  return info.param.kind + "_" + info.param.db.name;
}

class CliRunKindTest : public ::testing::TestWithParam<kind_case> {
 protected:
  void SetUp() override {
    SQLLOCK_REQUIRE_SERVER(GetParam().db.uri);
    dir_ = make_temp_dir("sqllock-cli");
    table_ = unique_name("clik");
    lock_ = unique_name(GetParam().kind);  // advisory and named locks are server-wide
    std::string err;
    ASSERT_EQ(run_cli({"migrate", "--db", GetParam().db.owner_uri, "--table", table_}, dir_, &err), 0) << err;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // `sqllock run --kind KIND --db … --table … --lock LOCK OPTIONS… -- COMMAND…`
  std::vector<std::string> run_args(std::vector<std::string> options, std::vector<std::string> command,
                                    const std::string& kind = "") const {
    // Flag and value pairs wrapped by hand: clang-format 14 would align them in three columns.
    // clang-format off
    std::vector<std::string> a{"run", "--kind", kind.empty() ? GetParam().kind : kind, "--db", GetParam().db.uri,
                               "--table", table_, "--lock", lock_};
    // clang-format on
    a.insert(a.end(), options.begin(), options.end());
    a.push_back("--");
    a.insert(a.end(), command.begin(), command.end());
    return a;
  }
  int run(std::vector<std::string> options, std::vector<std::string> command, std::string* err = nullptr,
          const std::string& kind = "") const {
    return run_cli(run_args(std::move(options), std::move(command), kind), dir_, err);
  }
  // A holder whose command signals `ready`, then holds until release() creates its release file.
  // Holding on a file rather than a sleep keeps the tests right however slowly the CLI starts
  // (an ASan build takes most of a second per run).
  std::unique_ptr<cli_process> start_holder() const {
    auto p = std::make_unique<cli_process>(
        run_args({}, {"sh", "-c", "touch '" + ready_file().string() + "'; " + wait_for_file_sh(release_file())}), dir_);
    EXPECT_TRUE(eventually([&] { return fs::exists(ready_file()) || !p->running(); })) << "holder never started";
    EXPECT_TRUE(fs::exists(ready_file())) << "holder exited early: " << p->err();
    return p;
  }
  fs::path ready_file() const { return dir_ / "ready"; }
  fs::path release_file() const { return dir_ / "release"; }
  void release_holder() const { std::ofstream(release_file()).put('\n'); }

  fs::path dir_;
  std::string table_, lock_;
};

TEST_P(CliRunKindTest, HolderExcludesOthersUntilItExits) {
  auto holder = start_holder();
  std::string err;
  EXPECT_EQ(run({"-n"}, {"true"}, &err), 1) << err;
  EXPECT_NE(err.find("held elsewhere"), std::string::npos) << err;
  EXPECT_EQ(run({"-n", "-E", "7"}, {"true"}), 7);
  EXPECT_EQ(run({"-w", "200ms"}, {"true"}), 1) << "--wait gives up while the lock is held";
  EXPECT_EQ(run({"-n"}, {"true"}, &err, "table"), 0) << "a table lock of the same name is another lock: " << err;
  cli_process waiter(run_args({"--wait", "20s"}, {"true"}), dir_);
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(waiter.running()) << "a bounded wait waits while the lock is held: " << waiter.err();
  release_holder();
  EXPECT_EQ(waiter.wait(), 0) << "a bounded wait gets the lock once the holder exits: " << waiter.err();
  EXPECT_EQ(holder->wait(), 0) << holder->err();
  EXPECT_EQ(run({"-n"}, {"true"}, &err), 0) << "released after the holder exited: " << err;
}

TEST_P(CliRunKindTest, AWaiterRunsAfterTheHolder) {
  auto holder = start_holder();
  cli_process waiter(run_args({}, {"sh", "-c", "exit 4"}), dir_);
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(waiter.running()) << "waits while the lock is held: " << waiter.err();
  release_holder();
  EXPECT_EQ(waiter.wait(), 4) << waiter.err();
  EXPECT_EQ(holder->wait(), 0) << holder->err();
}

TEST_P(CliRunKindTest, ExitStatusIsTheCommands) {
  EXPECT_EQ(run({}, {"true"}), 0);
  EXPECT_EQ(run({}, sh_cmd("exit 3")), 3);
  EXPECT_EQ(run({"-n"}, sh_cmd("exit 42")), 42);
  EXPECT_EQ(run({"--wait", "1s"}, sh_cmd("kill -KILL $$")), 128 + SIGKILL);
  EXPECT_EQ(run({}, {"sqllock-no-such-command-xyz"}), 127);
  EXPECT_EQ(run({"-n"}, {"true"}), 0) << "every run released its lock";
}

TEST_P(CliRunKindTest, SignalWhileWaitingEndsTheWait) {
  auto holder = start_holder();
  cli_process waiter(run_args({}, {"touch", (dir_ / "ran").string()}), dir_);
  ASSERT_TRUE(eventually([&] { return waiter.blocks_sigterm() || !waiter.running(); }));
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(waiter.running()) << waiter.err();
  ::kill(waiter.pid(), SIGTERM);
  EXPECT_EQ(waiter.wait(5s), 128 + SIGTERM) << waiter.err();
  EXPECT_FALSE(fs::exists(dir_ / "ran")) << "the command must not run";
  release_holder();
  EXPECT_EQ(holder->wait(), 0) << holder->err();
}

INSTANTIATE_TEST_SUITE_P(Kinds, CliRunKindTest, ::testing::ValuesIn(kind_cases(true)), kind_case_name);

// The kinds held by sqllock's database session: row, advisory, named.
class CliRunSessionKindTest : public CliRunKindTest {};

// Ending sqllock's database sessions while CMD runs (an operator's pg_terminate_backend or KILL, a
// failover). Advisory and named locks notice the dead session by their keepalive ping (every 5 s),
// stop CMD with SIGTERM and exit 5. A row lock has no loss signal (README): CMD runs to its end,
// and the commit that fails afterwards turns its status into 5.
TEST_P(CliRunSessionKindTest, KilledSessionEndsTheRunWithExit5) {
  const trapping_command cmd(dir_);
  cli_process p(run_args({}, cmd.argv("TERM", 0)), dir_);
  ASSERT_TRUE(cmd.started(p)) << p.err();
  const database admin(GetParam().db.owner_uri);  // may see and end the runtime role's sessions
  const auto sessions = sessions_of_process(admin, p.pid());
  // Sessions are traced by client port, which a container's port forwarding hides; the servers
  // of scripts/test-servers.sh (which write their ports) are reached directly.
  const bool ours = test_setting(GetParam().db.dialect == dialect_kind::postgresql ? "SQLLOCK_TEST_PG_PORT"
                                                                                   : "SQLLOCK_TEST_MY_PORT")
                        .has_value();
  if (sessions.empty() && !ours) GTEST_SKIP() << "sqllock's sessions cannot be traced to it on this server";
  ASSERT_FALSE(sessions.empty()) << "no database session of sqllock found";
  for (const auto id : sessions) EXPECT_TRUE(kill_session(admin, id)) << id;

  const bool row = GetParam().kind == "row";
  if (row) {
    // The command ends only once the server has closed the sessions, so its commit cannot win.
    ASSERT_TRUE(eventually([&] { return sessions_of_process(admin, p.pid()).empty(); }, 10s));
    EXPECT_TRUE(p.running()) << "a row lock's command runs on: " << p.err();
    cmd.let_it_exit();
  }
  const auto t0 = steady::now();
  EXPECT_EQ(p.wait(30s), 5) << "although the command exited 0: " << p.err();
  if (row) {
    EXPECT_NE(p.err().find("ending the transaction of row lock '" + lock_ + "' failed after the command ran"),
              std::string::npos)
        << p.err();
    EXPECT_FALSE(fs::exists(cmd.got)) << "no SIGTERM: the loss shows only after the command";
  } else {
    EXPECT_LT(steady::now() - t0, 10s) << "noticed within the 5 s keepalive and a round trip";
    EXPECT_NE(p.err().find("sqllock: lock '" + lock_ + "' lost while the command was running"), std::string::npos)
        << p.err();
    EXPECT_EQ(read_file(cmd.got), "TERM\n") << "the command was sent SIGTERM";
    EXPECT_FALSE(cmd.alive()) << "the command is gone";
  }
  std::string err;
  EXPECT_EQ(run({"-n"}, {"true"}, &err), 0) << "the server freed the lock with its session: " << err;
}

INSTANTIATE_TEST_SUITE_P(Kinds, CliRunSessionKindTest, ::testing::ValuesIn(kind_cases(true, session_kind)),
                         kind_case_name);

// The kinds that wait in the queue: fair, rw (exclusive unless --shared).
class CliRunQueueKindTest : public CliRunKindTest {};

TEST_P(CliRunQueueKindTest, WaitingRunsGetTheLockInTheOrderTheyArrived) {
  auto holder = start_holder();
  const auto order = dir_ / "order";
  std::vector<std::unique_ptr<cli_process>> waiters;
  for (int i = 0; i < 3; ++i) {
    const auto command = sh_cmd("echo " + std::to_string(i) + " >> '" + order.string() + "'");
    waiters.push_back(std::make_unique<cli_process>(run_args({}, command), dir_));
    // The next one starts once this one has its place in the queue, behind the holder.
    ASSERT_TRUE(eventually([&] {
      return queue_places(GetParam().db.uri, table_) == i + 2 || !waiters.back()->running();
    })) << waiters.back()->err();
    ASSERT_TRUE(waiters.back()->running()) << waiters.back()->err();
  }
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(fs::exists(order)) << "they wait while the lock is held";
  release_holder();
  EXPECT_EQ(holder->wait(), 0) << holder->err();
  for (auto& w : waiters) EXPECT_EQ(w->wait(), 0) << w->err();
  EXPECT_EQ(read_file(order), "0\n1\n2\n") << "first come, first served";
  EXPECT_EQ(queue_places(GetParam().db.uri, table_), 0) << "every run left the queue";
}

// A signal that ends a queued run's wait gives its place back at once (a stop of the library's
// wait), rather than leaving it to run out with its lease: those behind it move up.
TEST_P(CliRunQueueKindTest, ASignalWhileQueuedGivesThePlaceBackAtOnce) {
  auto holder = start_holder();
  ASSERT_TRUE(eventually([&] { return queue_places(GetParam().db.uri, table_) == 1; })) << "the holder's place";
  cli_process waiter(run_args({"--ttl", "60s"}, {"touch", (dir_ / "ran").string()}), dir_);
  ASSERT_TRUE(eventually([&] { return queue_places(GetParam().db.uri, table_) == 2 || !waiter.running(); }))
      << waiter.err();
  ASSERT_TRUE(waiter.running()) << waiter.err();
  const auto t0 = steady::now();
  ::kill(waiter.pid(), SIGTERM);
  EXPECT_EQ(waiter.wait(10s), 128 + SIGTERM) << waiter.err();
  EXPECT_LT(steady::now() - t0, 5s) << "the stop ended the wait promptly";
  EXPECT_NE(waiter.err().find("while waiting for lock '" + lock_ + "'"), std::string::npos) << waiter.err();
  EXPECT_EQ(queue_places(GetParam().db.uri, table_), 1) << "the waiter's place (a 60 s lease) was given back";
  EXPECT_FALSE(fs::exists(dir_ / "ran")) << "the command must not run";
  release_holder();
  EXPECT_EQ(holder->wait(), 0) << holder->err();
}

// `sqllock release --force --kind fair|rw` deletes the running command's place: the run's next
// renewal (every ttl/3) finds it gone, stops the command and exits 5.
TEST_P(CliRunQueueKindTest, ForcedReleaseStopsTheCommandAndExits5) {
  const trapping_command cmd(dir_);
  cli_process p(run_args({"--ttl", "1s"}, cmd.argv("TERM", 0)), dir_);
  ASSERT_TRUE(cmd.started(p)) << p.err();
  cli_process release(
      {"release", "--kind", GetParam().kind, "--db", GetParam().db.uri, "--table", table_, "--lock", lock_, "--force"},
      dir_);
  ASSERT_EQ(release.wait(), 0) << release.err();
  EXPECT_NE(release.out().find("released the holding place 1 "), std::string::npos) << release.out();
  EXPECT_NE(release.out().find(" pid " + std::to_string(p.pid()) + " "), std::string::npos) << release.out();
  const auto t0 = steady::now();
  EXPECT_EQ(p.wait(10s), 5) << "exit_lock_lost although the command exited 0: " << p.err();
  EXPECT_LT(steady::now() - t0, 5s);
  EXPECT_NE(p.err().find("sqllock: lock '" + lock_ + "' lost while the command was running"), std::string::npos)
      << p.err();
  EXPECT_EQ(read_file(cmd.got), "TERM\n") << "the command was sent SIGTERM";
  EXPECT_FALSE(cmd.alive()) << "the command is gone";
  std::string err;
  EXPECT_EQ(run({"-n"}, {"true"}, &err), 0) << "the lock is free: " << err;
}

INSTANTIATE_TEST_SUITE_P(Kinds, CliRunQueueKindTest,
                         ::testing::ValuesIn(kind_cases(true, [](const std::string& k) { return !session_kind(k); })),
                         kind_case_name);

// A kind the database's dialect lacks is a usage error, before anything runs.
class CliRunUnsupportedKindTest : public ::testing::TestWithParam<kind_case> {};

TEST_P(CliRunUnsupportedKindTest, Exits2WithAMessage) {
  SQLLOCK_REQUIRE_SERVER(GetParam().db.uri);
  const auto dir = make_temp_dir("sqllock-cli");
  std::string err;
  EXPECT_EQ(run_cli({"run", "--kind", GetParam().kind, "--db", GetParam().db.uri, "--lock", "x", "--", "touch",
                     (dir / "ran").string()},
                    dir, &err),
            2)
      << err;
  EXPECT_NE(err.find("--kind " + GetParam().kind + " needs"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir / "ran")) << "nothing ran";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CliRunUnsupportedKindTest, ::testing::ValuesIn(kind_cases(false)), kind_case_name);

// Cases that do not depend on the database kind run on SQLite only.
class CliRunSqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("sqllock-cli");
    uri_ = "sqlite://" + (dir_ / "locks.db").string();
    std::string err;
    ASSERT_EQ(run_cli({"migrate", "--db", uri_}, dir_, &err), 0) << err;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string uri_;
};

TEST_F(CliRunSqliteTest, BadInputIsAUsageError) {
  const std::vector<std::vector<std::string>> bad = {
      {"run", "--db", uri_, "--", "true"},                                                   // no --lock
      {"run", "--db", uri_, "--lock", "", "--", "true"},                                     // empty name
      {"run", "--db", uri_, "--lock", "x"},                                                  // no command
      {"run", "--db", uri_, "--lock", "x", "--"},                                            // empty command
      {"run", "--db", uri_, "--lock", "x", "true"},                                          // command without --
      {"run", "--db", uri_, "--lock", "x", "--bogus", "--", "true"},                         // unknown option
      {"run", "--db", uri_, "--lock", "x", "--wait", "5x", "--", "true"},                    // bad duration
      {"run", "--db", uri_, "--lock", "x", "--wait", "-1", "--", "true"},                    // negative
      {"run", "--db", uri_, "--lock", "x", "--wait=", "--", "true"},                         // empty
      {"run", "--db", uri_, "--lock", "x", "--ttl", "1y", "--", "true"},                     // unknown unit
      {"run", "--db", uri_, "--lock", "x", "--ttl", "0", "--", "true"},                      // zero ttl
      {"run", "--db", uri_, "--lock", "x", "--wait", "99999999999999999999", "--", "true"},  // overflow
      {"run", "--db", uri_, "--lock", "x", "-n", "--wait", "1s", "--", "true"},              // both
      {"run", "--db", uri_, "--lock", "x", "-E", "256", "-n", "--", "true"},                 // exit code range
      {"run", "--db", uri_, "--lock", "x", "-E", "x", "-n", "--", "true"},
      {"run", "--db", uri_, "--lock", "x", "--kill-after", "5x", "--", "true"},                       // bad duration
      {"run", "--db", uri_, "--lock", "x", "--kill-after", "-1", "--", "true"},                       // negative
      {"run", "--db", uri_, "--lock", "x", "--kind", "advisory", "--", "true"},                       // PostgreSQL only
      {"run", "--db", uri_, "--lock", "x", "--kind", "bogus", "--", "true"},                          // unknown kind
      {"run", "--db", uri_, "--lock", "x", "--kind", "named", "--ttl", "1s", "--", "true"},           // ttl: table only
      {"run", "--db", uri_, "--lock", "x", "--kind", "fair", "--shared", "--", "true"},               // one mode
      {"run", "--db", uri_, "--lock", "x", "--exclusive", "--", "true"},                              // table: one mode
      {"run", "--db", uri_, "--lock", "x", "--kind", "semaphore", "--shared", "--", "true"},          // one mode
      {"run", "--db", uri_, "--lock", "x", "--kind", "rw", "--shared", "--exclusive", "--", "true"},  // both
      {"run", "--db", uri_, "--lock", "x", "--lock", "y", "--kind", "rw", "--", "true"},   // several: table only
      {"run", "--db", uri_, "--lock", "x", "--kind", "fair", "--ttl", "0", "--", "true"},  // zero ttl
      {"run", "--db", "nosuchscheme://x", "--lock", "x", "--", "true"},                    // bad URI
      {"run", "--db", "--lock", "x", "--", "true"},                                        // --db without its value
  };
  for (const auto& args : bad) {
    std::string err;
    std::string shown;
    for (const auto& a : args) shown += "'" + a + "' ";
    EXPECT_EQ(run_cli(args, dir_, &err), 2) << shown << "\n" << err;
    EXPECT_NE(err.rfind("sqllock: ", 0), std::string::npos) << shown << "\n" << err;
  }
  std::string err;
  run_cli({"run", "--db", uri_, "--lock", "x", "--wait", "5x", "--", "true"}, dir_, &err);
  EXPECT_NE(err.find("500ms, 30s, 5m, 1h"), std::string::npos) << "the message shows the accepted forms: " << err;
  run_cli({"run", "--db", uri_, "--lock", "x", "--kind", "bogus", "--", "true"}, dir_, &err);
  EXPECT_NE(err.find("use table, semaphore, fair, rw, row, advisory or named"), std::string::npos) << err;
  run_cli({"run", "--db", uri_, "--lock", "x", "--kind", "fair", "--shared", "--", "true"}, dir_, &err);
  EXPECT_NE(err.find("--shared and --exclusive apply to --kind rw only"), std::string::npos) << err;
  run_cli({"run", "--db", uri_, "--lock", "x", "--kind", "rw", "--shared", "--exclusive", "--", "true"}, dir_, &err);
  EXPECT_NE(err.find("--shared and --exclusive exclude each other"), std::string::npos) << err;
  EXPECT_EQ(queue_places(uri_, "distributed_lock"), 0) << "no place was taken";
  run_cli({"run", "--lock", "x", "--db", "--frobnicate", "--", "true"}, dir_, &err);
  EXPECT_NE(err.find("--db needs a value, not the option --frobnicate"), std::string::npos) << err;
  EXPECT_EQ(run_cli({"run", "--db", uri_, "--lock=--dashes", "--", "true"}, dir_, &err), 0)
      << "a value that starts with -- can be given with =: " << err;
  EXPECT_FALSE(fs::exists(dir_ / "true")) << "nothing ran";
}

TEST_F(CliRunSqliteTest, DatabaseFromTheEnvironment) {
  ::setenv("SQLLOCK_DB", uri_.c_str(), 1);
  EXPECT_EQ(run_cli({"run", "--lock", "env", "--", "sh", "-c", "exit 5"}, dir_), 5);
  ::unsetenv("SQLLOCK_DB");
  EXPECT_EQ(run_cli({"run", "--lock", "env", "--", "true"}, dir_), 2) << "no --db and no $SQLLOCK_DB";
}

TEST_F(CliRunSqliteTest, UnreachableDatabaseExits3) {
  const dead_port refusing;
  for (const std::string& uri :
       {refusing.uri("postgresql"), refusing.uri("mysql"), std::string("sqlite:///nonexistent-sqllock-dir/locks.db")}) {
    std::string err;
    EXPECT_EQ(run_cli({"run", "--db", uri, "--lock", "x", "--", "true"}, dir_, &err), 3) << uri << "\n" << err;
  }
}

// SIGTERM forwarding is tested on every database (CliRunTest); SIGINT takes the same path once.
TEST_F(CliRunSqliteTest, SigintIsForwardedToo) {
  const trapping_command cmd(dir_);
  std::vector<std::string> args{"run", "--db", uri_, "--lock", "int", "--"};
  for (const auto& a : cmd.argv("INT", 9)) args.push_back(a);
  cli_process p(args, dir_);
  ASSERT_TRUE(cmd.started(p)) << p.err();
  ::kill(p.pid(), SIGINT);
  EXPECT_EQ(p.wait(), 9) << "sqllock exits with the command's status: " << p.err();
  EXPECT_EQ(read_file(cmd.got), "INT\n") << "the command received the SIGINT";
  EXPECT_EQ(run_cli({"run", "--db", uri_, "--lock", "int", "-n", "--", "true"}, dir_), 0) << "the lock was released";
}

TEST_F(CliRunSqliteTest, UnmigratedSqliteFileExits4) {
  std::string err;
  EXPECT_EQ(
      run_cli({"run", "--db", "sqlite://" + (dir_ / "empty.db").string(), "--lock", "x", "--", "true"}, dir_, &err), 4)
      << err;
}

TEST_F(CliRunSqliteTest, LostLockKillsACommandThatIgnoresSigterm) {
  const auto ready = dir_ / "ready", pidfile = dir_ / "pid";
  cli_process p({"run", "--db", uri_, "--lock", "stubborn", "--ttl", "1s", "--", "sh", "-c",
                 "echo $$ > '" + pidfile.string() + "'; trap '' TERM; touch '" + ready.string() + "'; " +
                     wait_for_file_sh(dir_ / "never")},
                dir_);
  ASSERT_TRUE(eventually([&] { return fs::exists(ready) || !p.running(); }));
  ASSERT_TRUE(p.running()) << p.err();
  {
    database db(uri_);
    sql(db, "DELETE FROM distributed_lock WHERE resource = $1", {std::string("stubborn")});
  }
  const auto t0 = steady::now();
  EXPECT_EQ(p.wait(30s), 5) << p.err();
  const auto took = steady::now() - t0;
  EXPECT_GE(took, 9s) << "SIGKILL only after the 10 s grace period";
  EXPECT_LT(took, 15s);
  EXPECT_NE(::kill(std::stoi(read_file(pidfile)), 0), 0) << "the command was killed";
}

TEST(CliHelpTest, RunIsListedAndDocumented) {
  const auto dir = make_temp_dir("sqllock-cli");
  cli_process top({"--help"}, dir);
  EXPECT_EQ(top.wait(), 0);
  EXPECT_NE(top.out().find("  run "), std::string::npos) << top.out();
  cli_process run({"run", "--help"}, dir);
  EXPECT_EQ(run.wait(), 0);
  const auto text = run.out();
  EXPECT_NE(text.find("usage: sqllock run"), std::string::npos) << text;
  EXPECT_NE(text.find("lost"), std::string::npos) << "documents the lost-lock behaviour: " << text;
  EXPECT_NE(text.find("SIGTERM"), std::string::npos) << text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sqllock::test
