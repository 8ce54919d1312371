// The statement timer: what makes a statement on a silently cut network end at its bound.
//
// A statement whose packets are dropped (or whose server stopped answering) blocks in the client
// library's read until TCP gives up — about 15 minutes on Linux — and no client library sqllock
// uses can be told to give up sooner on one call (libpq and Connector/C++ have no per-call read
// timeout; kernel options never fire while the peer's kernel still acknowledges). So the caller
// arms the timer with the statement's socket and deadline before sending it, and disarms it when
// the call returns. When a deadline passes while its statement is still armed, the timer's thread
// calls ::shutdown(SHUT_RDWR) on the socket: the blocked read returns at once, the client library
// reports a lost connection, and the connection is discarded.
//
// The timer never shuts down a descriptor it does not own: arming duplicates the socket (dup), and
// the timer acts on, and disarming closes, that duplicate. A client library that closes its own
// descriptor while the statement is armed (libpq and libmariadb do after an error) leaves the
// duplicate pointing at the same socket, never at a descriptor reused by another open().
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <thread>

#include <sys/types.h>

namespace sqllock::detail {

class statement_timer {
 public:
  using clock = std::chrono::steady_clock;

  // One armed statement. Move-only; disarm before destroying an armed one (the destructor of a
  // still-armed ticket disarms it).
  class ticket {
   public:
    ticket() noexcept = default;
    ticket(ticket&& other) noexcept;
    ticket& operator=(ticket&& other) noexcept;
    ~ticket();
    // Whether a deadline is being watched (false when the socket was -1 or could not be duplicated).
    bool armed() const noexcept { return timer_ != nullptr; }
    // Stops watching; returns true when the deadline had passed and the socket was shut down.
    // Closes the duplicate. Idempotent: false after the first call.
    bool disarm() noexcept;

   private:
    friend class statement_timer;
    struct entry {
      int fd;  // the duplicate, owned by the timer
      clock::time_point deadline;
      bool fired = false;
    };
    ticket(statement_timer* timer, std::list<entry>::iterator it) noexcept : timer_(timer), it_(it) {}
    statement_timer* timer_ = nullptr;
    std::list<entry>::iterator it_;
  };

  // A timer without a thread: fire_due() is called by the owner (unit tests). Use process() for
  // the product's timer, whose thread calls fire_due() on time.
  statement_timer() = default;
  ~statement_timer();
  statement_timer(const statement_timer&) = delete;
  statement_timer& operator=(const statement_timer&) = delete;

  // The timer of this process, with its thread (started on the first arm). A forked child gets a
  // new one: the parent's thread does not exist there. Never destroyed.
  static statement_timer& process();

  // Watches `socket` until the ticket is disarmed: if `deadline` passes first, the socket is shut
  // down. `socket` must be open and stay open until arm() returns. Returns an unarmed ticket when
  // socket is -1, deadline is time_point::max(), or no descriptor is left for the duplicate.
  ticket arm(int socket, clock::time_point deadline);

  // Shuts down the socket of every armed statement whose deadline is at or before `now`, and
  // returns the earliest deadline still armed (time_point::max() when none). Thread-safe.
  clock::time_point fire_due(clock::time_point now);

  // Statements armed now.
  std::size_t armed_count() const;

 private:
  void run(std::stop_token stop);
  bool start_thread_locked() noexcept;  // false when no thread can be had

  mutable std::mutex mu_;
  std::condition_variable_any changed_;
  std::list<ticket::entry> entries_;
  // When the thread wakes next (max while it sleeps without a deadline; min while it is awake).
  clock::time_point wake_at_ = clock::time_point::min();
  bool threaded_ = false;  // process(): a thread calls fire_due
  pid_t owner_pid_ = 0;    // the process whose thread it is
  std::jthread thread_;
};

}  // namespace sqllock::detail
