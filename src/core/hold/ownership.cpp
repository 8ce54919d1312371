#include "core/hold/ownership.hpp"

#include <iostream>

#include "common/identity.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

ownership::ownership(std::string options_name, std::string what, std::string owner_key,
                     unlock_error_callback on_unlock_error)
    : options_name_(std::move(options_name)), what_(std::move(what)), key_(std::move(owner_key)),
      on_unlock_error_(std::move(on_unlock_error)) {
  if (key_.size() > 128) {
    std::string message = options_name_;
    message += "::owner is longer than 128 bytes; use a shorter key (e.g. a hash of it)";
    throw invalid_argument(message);
  }
  if (!on_unlock_error_) {
    on_unlock_error_ = [what = what_](const std::exception& e) {
      std::cerr << "sqllock: unlock of " << what << " failed: " << e.what() << '\n';
    };
  }
}

std::string ownership::owner() const {
  if (!key_.empty()) return "k:" + key_;
  return "t:" + current_thread_text();
}

void ownership::report(const std::exception& e) const noexcept {
  try {
    on_unlock_error_(e);
  } catch (...) {
  }
}

std::string ownership::not_held_message(bool others_hold) const {
  std::string m = what_;
  if (others_hold && key_.empty()) {
    m += " is not held by the calling thread (another thread of this object holds it); unlock it from the thread "
         "that locked it, or set ";
    m += options_name_;
    m += "::owner";
  } else {
    m += " is not held by the caller (unlock without lock, or more unlocks than locks)";
  }
  return m;
}

std::string ownership::lost_before_release(std::string_view why) const {
  std::string m = what_;
  m += " was lost before this release (";
  m += why;
  m += "); the work it guarded may have overlapped another holder's";
  return m;
}

}  // namespace sqllock::detail
