// The shared state behind a sqllock::database handle: parsed URI, dialect SQL, the connection
// pool, the clock, and the per-process state of its locks — the lease registry (table_lock), the
// session registry (advisory_lock, named_lock) and the wake-up listener. It owns all three, so a
// fork is handled in one place (forget_if_forked).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/uri.hpp"
#include "core/handle/clock.hpp"
#include "core/handle/galera_guard.hpp"
#include "core/lease/lease_registry.hpp"
#include "core/wait/wakeup_hub.hpp"
#include "dialect/dialect.hpp"
#include "driver/connection.hpp"
#include "sqllock/database.hpp"

namespace sqllock::detail {

class database_impl;
class session_registry;

// What a handle runs on besides its URI; unit tests substitute both. Empty members take the
// defaults: the real steady clock, and the driver the URI names (open_connection).
struct database_seams {
  std::shared_ptr<detail::time_source> time;
  std::function<std::unique_ptr<connection>()> connect;
};

// A connection borrowed from the pool; returned on destruction unless it broke. Move-only.
class pooled_connection {
 public:
  pooled_connection(database_impl* owner, std::unique_ptr<connection> conn) noexcept
      : owner_(owner), conn_(std::move(conn)) {}
  pooled_connection(pooled_connection&&) noexcept = default;
  pooled_connection& operator=(pooled_connection&&) noexcept = default;
  ~pooled_connection();

  // Closes the connection now instead of returning it to the pool; then holds none. For a
  // connection whose session must end (it may hold locks nobody tracks any more) when the pool may
  // already be gone.
  void close() noexcept { conn_.reset(); }

  connection& operator*() const noexcept { return *conn_; }
  connection* operator->() const noexcept { return conn_.get(); }

 private:
  database_impl* owner_;
  std::unique_ptr<connection> conn_;
};

class database_impl : public std::enable_shared_from_this<database_impl> {
 public:
  database_impl(connection_spec spec, database_options options, database_seams seams = {});
  ~database_impl();
  database_impl(const database_impl&) = delete;
  database_impl& operator=(const database_impl&) = delete;

  // An idle connection, or a new one. Throws connection_error when none can be opened.
  pooled_connection borrow();
  // A new connection outside the pool (a listener's). Throws connection_error.
  std::unique_ptr<connection> open() { return connect_(); }

  const connection_spec& spec() const noexcept { return spec_; }
  const database_options& options() const noexcept { return options_; }
  const dialect_sql& sql() const noexcept { return *sql_; }
  dialect_kind dialect() const noexcept { return spec_.dialect; }

  // The clock every timing rule of this handle reads (core/handle/clock.hpp).
  time_source& time() const noexcept { return *clock_; }

  // A reference that keeps this handle alive, for a thread of its own that runs user callbacks
  // (run_callbacks_keeping); empty while the handle is being destroyed.
  std::shared_ptr<const void> keep_alive() const noexcept { return weak_from_this().lock(); }

  // The holds of this handle in this process, with their renewal watchdog. A forked child gets a
  // new, empty registry: it holds none of its parent's locks.
  lease_registry& registry();

  // The pinned sessions of this handle in this process (session locks), with their keepalive; per
  // process, like registry(). Shared: an operation keeps it while it runs.
  std::shared_ptr<session_registry> sessions();

  // Release notifications for lock waiters (see wakeup_hub.hpp); per process, like registry().
  wakeup_hub& wakeups();

  // Whether the server is a node of a multi-node Galera cluster, asked on the handle's first named
  // or row lock operation and kept for its life (core/handle/galera_guard.hpp). Thread-safe.
  galera_verdict_cache& galera() noexcept { return galera_; }

 private:
  friend class pooled_connection;
  void give_back(std::unique_ptr<connection> conn) noexcept;
  // In a forked child, drops the parent's connections, registries and listener without touching
  // the server or joining their threads (which do not exist there).
  void forget_if_forked() noexcept;  // requires mu_

  connection_spec spec_;
  database_options options_;
  std::shared_ptr<const dialect_sql> sql_;
  std::shared_ptr<detail::time_source> clock_;
  std::function<std::unique_ptr<connection>()> connect_;
  std::mutex mu_;
  // An idle connection and the thread that gave it back.
  struct idle_connection {
    std::unique_ptr<connection> conn;
    std::int64_t returned_by;
  };
  std::vector<idle_connection> idle_;
  pid_t pid_;
  std::unique_ptr<wakeup_hub> wakeups_;         // created with the first wait
  std::unique_ptr<lease_registry> registry_;    // created with the first table lock
  std::shared_ptr<session_registry> sessions_;  // created with the first session lock
  galera_verdict_cache galera_;
};

struct database_access {
  static database_impl& impl(const database& db) { return *db.impl_; }
  // A handle on `impl` (unit tests build an impl on a fake clock and connection).
  static database wrap(std::shared_ptr<database_impl> impl) { return database(std::move(impl)); }
};

}  // namespace sqllock::detail
