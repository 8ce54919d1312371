// One loss signal for a hold made of several parts (a multi_lock's names): it stops when any
// part's signal does, and lets the user's on_lost run once however many parts are lost.
#pragma once

#include <atomic>
#include <memory>
#include <stop_token>
#include <vector>

namespace sqllock::detail {

class joined_loss {
 public:
  // Watches `parts` (each a part's loss token) for as long as this object lives.
  explicit joined_loss(const std::vector<std::stop_token>& parts) {
    watchers_.reserve(parts.size());
    for (const auto& p : parts) watchers_.push_back(std::make_unique<watcher>(p, forward{source_}));
  }
  std::stop_token token() const { return source_.get_token(); }
  // True the first time only: the caller reports the loss.
  bool first_report() noexcept { return !told_.exchange(true); }

 private:
  struct forward {
    std::stop_source target;
    void operator()() noexcept { target.request_stop(); }
  };
  using watcher = std::stop_callback<forward>;
  std::stop_source source_;
  std::vector<std::unique_ptr<watcher>> watchers_;
  std::atomic<bool> told_{false};
};

}  // namespace sqllock::detail
