#include "core/hold/loss_signal.hpp"

#include <thread>
#include <utility>

namespace sqllock::detail {

void run_callbacks(callbacks& cbs) noexcept {
  for (auto& cb : cbs) {
    try {
      if (cb) cb();
    } catch (...) {
    }
  }
}

void run_callbacks_keeping(callbacks& cbs, std::shared_ptr<const void> keep) noexcept {
  if (cbs.empty()) return;
  run_callbacks(cbs);
  if (!keep) return;
  try {
    auto* held = new std::shared_ptr<const void>(std::move(keep));
    try {
      std::thread([held] { delete held; }).detach();
    } catch (...) {
      // No thread to be had: leak the reference rather than destroy the handle on this thread.
    }
  } catch (...) {  // out of memory
  }
}

namespace {

// A stop source with a new state. Not inlined: g++ 12 at -Os reports the default constructor,
// which passes *this to its state before that is built, as a use of an uninitialised object
// (-Wmaybe-uninitialized) once it is inlined into an assignment.
[[gnu::noinline]] std::stop_source new_stop_source() { return std::stop_source(); }

}  // namespace

void loss_signal::rearm() {
  std::stop_source fresh = new_stop_source();
  std::lock_guard lock(mu_);
  stop_.swap(fresh);
  fired_ = false;
}

callbacks loss_signal::fire() {
  callbacks out;
  std::unique_lock lock(mu_);
  if (fired_) return out;
  fired_ = true;
  std::stop_source stop(stop_);  // a copy shares the state
  for (const auto& [key, cb] : callbacks_)
    if (cb) out.push_back(cb);
  lock.unlock();
  stop.request_stop();  // runs the holders' std::stop_callbacks: not under mu_
  return out;
}

bool loss_signal::fired() const {
  std::lock_guard lock(mu_);
  return fired_;
}

std::stop_token loss_signal::token() const {
  std::lock_guard lock(mu_);
  return stop_.get_token();
}

void loss_signal::set(const void* key, std::function<void()> callback) {
  std::lock_guard lock(mu_);
  callbacks_[key] = std::move(callback);
}

void loss_signal::clear(const void* key) {
  std::lock_guard lock(mu_);
  callbacks_.erase(key);
}

}  // namespace sqllock::detail
