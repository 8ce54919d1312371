// Who is holding a lock: host, process, thread, and random tokens that make owners unique.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace sqllock::detail {

// This machine's host name (gethostname), or "unknown-host".
const std::string& host_name();

// 32 hex characters from std::random_device: a handle's session token. Unique without
// coordination, unlike host names (two processes on one host) or pids (reused).
std::string random_token();

// The calling process's id. Same value as ::getpid(), without its system call (glibc no longer
// caches the pid, and every lock operation checks it to notice a fork): the value is refreshed by a
// pthread_atfork child handler. A child made by vfork, clone or posix_spawn must exec before it
// calls into sqllock — as POSIX already requires.
pid_t process_id() noexcept;

// The calling thread's kernel thread id, as shown by ps -L and in the lock table. Cached per
// thread and refreshed after a fork (the forking thread has a new id in the child).
std::int64_t current_thread_id() noexcept;

// current_thread_id() as decimal text, cached alongside it: owner tokens embed it on every call.
const std::string& current_thread_text();

}  // namespace sqllock::detail
