// Who is holding a lock: host, process, thread, and random tokens that make owners unique.
#pragma once

#include <cstdint>
#include <string>

namespace sqllock::detail {

// This machine's host name (gethostname), or "unknown-host".
const std::string& host_name();

// 32 hex characters from std::random_device: a handle's session token. Unique without
// coordination, unlike host names (two processes on one host) or pids (reused).
std::string random_token();

// The calling thread's kernel thread id, as shown by ps -L and in the lock table.
std::int64_t current_thread_id() noexcept;

}  // namespace sqllock::detail
