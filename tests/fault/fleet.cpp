#include "fault/fleet.hpp"

#include <signal.h>
#include <sys/wait.h>

#include "fault/history.hpp"
#include "fault/spawn.hpp"

namespace sqllock::fault {

fleet::fleet(int processes, std::filesystem::path dir, argv_fn argv_for)
    : processes_(processes), dir_(std::move(dir)), argv_for_(std::move(argv_for)) {}

fleet::~fleet() { kill_all(); }

void fleet::launch(int slot) {
  static int serial = 0;
  const auto history = dir_ / ("history-" + std::to_string(slot) + "-" + std::to_string(serial++) + ".txt");
  const pid_t pid = spawn(argv_for_(slot, history), (dir_ / "workers.log").string());
  procs_.push_back({pid, slot, history, 0, true});
}

void fleet::start() {
  std::lock_guard lock(mu_);
  for (int s = 0; s < processes_; ++s) launch(s);
}

void fleet::supervise() {
  std::lock_guard lock(mu_);
  const std::size_t n = procs_.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!procs_[i].alive || !reap(procs_[i].pid, nullptr)) continue;
    procs_[i].alive = false;
    if (respawn_) launch(procs_[i].slot);
  }
}

void fleet::stop_respawning() {
  std::lock_guard lock(mu_);
  respawn_ = false;
}

std::vector<pid_t> fleet::living() {
  std::lock_guard lock(mu_);
  std::vector<pid_t> out;
  for (const auto& p : procs_)
    if (p.alive) out.push_back(p.pid);
  return out;
}

pid_t fleet::in_slot(int slot) {
  std::lock_guard lock(mu_);
  for (const auto& p : procs_)
    if (p.alive && p.slot == slot) return p.pid;
  return 0;
}

std::int64_t fleet::signal(pid_t pid, int sig) {
  std::lock_guard lock(mu_);
  for (auto& p : procs_) {
    if (p.pid != pid || !p.alive) continue;
    const std::int64_t t = mono_ns();
    if (::kill(pid, sig) != 0) return 0;
    if (sig == SIGKILL) p.killed_at = t;
    return t;
  }
  return 0;
}

std::int64_t fleet::kill_all() {
  std::lock_guard lock(mu_);
  respawn_ = false;
  const std::int64_t t = mono_ns();
  for (auto& p : procs_) {
    if (!p.alive) continue;
    ::kill(p.pid, SIGKILL);
    p.killed_at = t;
  }
  for (auto& p : procs_) {
    if (!p.alive) continue;
    ::waitpid(p.pid, nullptr, 0);
    p.alive = false;
  }
  return t;
}

std::vector<worker_proc> fleet::all() {
  std::lock_guard lock(mu_);
  return procs_;
}

}  // namespace sqllock::fault
