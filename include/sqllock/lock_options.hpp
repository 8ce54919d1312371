// sqllock/lock_options.hpp — the option types every lock kind shares: who owns an acquisition,
// what to call when a held lock is lost, and where the errors of the never-throwing unlock() go.
// Each options struct (table_lock_options, session_lock_options) has one field of each type,
// named owner, on_lost and on_unlock_error; the rules written here hold for all of them, and a
// field's own comment adds only what differs for its lock kind.
//
// They are type names rather than a common base struct so that designated initialisers keep
// naming every field: `table_lock_options{.ttl = 10s, .owner = "job"}` (C++20 cannot designate a
// base class's members).
#pragma once

#include <exception>
#include <functional>
#include <string>

namespace sqllock {

// Explicit owner key. Empty: the calling thread owns each acquisition, like a std::mutex. Set:
// every thread using this key on the same database handle is the same owner (re-entrant), and may
// unlock what another thread locked. Scoped to the handle: the same key on another handle (or in
// another process) is another owner. At most 128 bytes.
using owner_key = std::string;

// Called once when a held lock is lost (see the lock kind for how it is noticed, and on which
// thread). Must not block for long and must not throw (exceptions are swallowed).
using lost_callback = std::function<void()>;

// Called when unlock() (which must not throw) fails; receives the error. Empty: one line on
// stderr. Use release() to get the exception instead.
using unlock_error_callback = std::function<void(const std::exception&)>;

}  // namespace sqllock
