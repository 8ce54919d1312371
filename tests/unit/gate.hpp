// A gate a fake statement can wait at until the test opens it: a server that does not answer.
#pragma once

#include <condition_variable>
#include <mutex>

namespace test {

class gate {
 public:
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace test
