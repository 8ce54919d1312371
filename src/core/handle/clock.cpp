#include "core/handle/clock.hpp"

#include <thread>
#include <utility>

namespace sqllock::detail {
namespace {

class real_steady_clock final : public time_source {
 public:
  time_point now() const noexcept override { return steady::now(); }
  void sleep_until(time_point until) override { std::this_thread::sleep_until(until); }
  void wait_until(std::condition_variable_any& cv, std::unique_lock<std::mutex>& lock, std::stop_token stop,
                  time_point until) override {
    // The predicate forms are the only ones that take a stop_token: this one ends the wait at the
    // first wake, whatever woke it.
    bool woken = false;
    const auto once = [&] { return std::exchange(woken, true); };
    if (until == time_point::max())
      cv.wait(lock, stop, once);
    else
      cv.wait_until(lock, stop, until, once);
  }
};

}  // namespace

std::shared_ptr<time_source> steady_clock() {
  static const auto shared = std::make_shared<real_steady_clock>();
  return shared;
}

}  // namespace sqllock::detail
