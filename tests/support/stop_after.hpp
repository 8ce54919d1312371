// A stop requested on a std::stop_source after a delay, from a thread of its own: the tests of waits
// that take a std::stop_token.
#pragma once

#include <chrono>
#include <stop_token>
#include <thread>

namespace sqllock::test {

class stop_after {
 public:
  // Requests a stop on `source` `delay` from now. The delay is counted from started(), read before
  // the thread starts, so a wait timed from started() never seems to end before the stop.
  stop_after(std::stop_source& source, std::chrono::milliseconds delay)
      : started_(std::chrono::steady_clock::now()), thread_([&source, delay] {
          std::this_thread::sleep_for(delay);
          source.request_stop();
        }) {}
  // Joins the thread: the stop has been requested once this returns.
  ~stop_after() = default;
  stop_after(const stop_after&) = delete;
  stop_after& operator=(const stop_after&) = delete;

  std::chrono::steady_clock::time_point started() const { return started_; }

 private:
  std::chrono::steady_clock::time_point started_;
  std::jthread thread_;
};

}  // namespace sqllock::test
