#include <unistd.h>

#include "core/handle/database_impl.hpp"
#include "common/identity.hpp"
#include "common/sql_text.hpp"
#include "core/handle/open_session.hpp"
#include "core/session/pinned_session.hpp"
#include "sqllock/error.hpp"

namespace sqllock {

std::string_view to_string(dialect_kind kind) noexcept {
  switch (kind) {
    case dialect_kind::postgresql: return "postgresql";
    case dialect_kind::mysql: return "mysql";
    case dialect_kind::sqlite: return "sqlite";
  }
  return "unknown";
}

namespace detail {

pooled_connection::~pooled_connection() {
  if (conn_ && owner_) owner_->give_back(std::move(conn_));
}

database_impl::database_impl(connection_spec spec, database_options options, database_seams seams)
    : spec_(std::move(spec)), options_(std::move(options)), clock_(seams.time ? std::move(seams.time) : steady_clock()),
      connect_(std::move(seams.connect)), pid_(process_id()) {
  validate_table_name(options_.table);
  if (options_.connect_timeout <= std::chrono::milliseconds::zero())
    throw invalid_argument("database_options::connect_timeout must be positive");
  if (options_.statement_timeout <= std::chrono::milliseconds::zero() ||
      options_.statement_timeout > std::chrono::hours(24))
    throw invalid_argument("database_options::statement_timeout must be positive and at most 24 hours");
  if (spec_.statement_timeout) options_.statement_timeout = *spec_.statement_timeout;  // the URI's wins
  sql_ = make_dialect_sql(spec_.dialect, options_.table);
  if (!connect_) {
    connect_ = [this] {
      auto conn = open_connection(spec_, options_.connect_timeout, options_.statement_timeout);
      prepare_periodic_statements(*conn, spec_.dialect, options_.table);
      return conn;
    };
  }
}

database_impl::~database_impl() {
  {
    std::lock_guard lock(mu_);
    forget_if_forked();
  }
  // Their threads may still borrow connections: stopped (joined) while the pool exists.
  sessions_.reset();
  registry_.reset();
  wakeups_.reset();
}

void database_impl::forget_if_forked() noexcept {
  if (process_id() == pid_) return;
  for (auto& c : idle_) c.conn->abandon();
  idle_.clear();
  // The parent's watchdog, keepalive and listener threads do not exist here, so their owners must
  // not be destroyed (that would join them): they are left to the process's end. Lock objects of
  // the parent's see their sessions' pid and report not_held.
  (void)registry_.release();
  (void)wakeups_.release();
  try {
    if (sessions_) new std::shared_ptr<session_registry>(std::move(sessions_));  // leaked on purpose
  } catch (...) {  // out of memory: keep it, still never destroyed while this impl lives
  }
  pid_ = process_id();
}

std::shared_ptr<session_registry> database_impl::sessions() {
  std::lock_guard lock(mu_);
  forget_if_forked();
  if (!sessions_) sessions_ = std::make_shared<session_registry>(*this);
  return sessions_;
}

wakeup_hub& database_impl::wakeups() {
  std::lock_guard lock(mu_);
  forget_if_forked();
  if (!wakeups_) wakeups_ = std::make_unique<wakeup_hub>(*this);
  return *wakeups_;
}

lease_registry& database_impl::registry() {
  std::lock_guard lock(mu_);
  forget_if_forked();
  if (!registry_) registry_ = std::make_unique<lease_registry>(*this);
  return *registry_;
}

pooled_connection database_impl::borrow() {
  const std::int64_t me = current_thread_id();
  while (true) {
    std::unique_ptr<connection> conn;
    {
      std::lock_guard lock(mu_);
      forget_if_forked();
      if (idle_.empty()) break;
      // The connection this thread gave back last, if it is idle (its buffers are likely still in
      // this core's cache: with many threads, handing connections around costs client CPU);
      // otherwise the one given back last.
      auto pick = idle_.end() - 1;
      for (auto it = idle_.begin(); it != idle_.end(); ++it)
        if (it->returned_by == me) pick = it;
      conn = std::move(pick->conn);
      idle_.erase(pick);
    }
    // Idle connections the server has closed (a restart, a killed session) would fail their first
    // statement: dropped (closed here, outside the mutex), and the next one tried.
    if (!conn->closed_by_server()) return pooled_connection(this, std::move(conn));
  }
  return pooled_connection(this, connect_());
}

void database_impl::give_back(std::unique_ptr<connection> conn) noexcept {
  std::lock_guard lock(mu_);
  if (process_id() != pid_) {  // borrowed before a fork, returned in the child
    conn->abandon();
    return;
  }
  if (conn->broken() || idle_.size() >= options_.pool_size) return;  // destructor closes it
  idle_.push_back({std::move(conn), current_thread_id()});
}

}  // namespace detail

database::database(std::string_view uri, database_options options)
    : impl_(std::make_shared<detail::database_impl>(detail::parse_uri(uri), std::move(options))) {
  impl_->borrow();  // connect once now, so a bad URI or an unreachable server fails here
}

database::database(std::shared_ptr<detail::database_impl> impl) noexcept : impl_(std::move(impl)) {}

dialect_kind database::dialect() const noexcept { return impl_->dialect(); }

std::string_view database::driver_name() const noexcept {
  switch (impl_->spec().driver) {
    case detail::driver_kind::pqxx: return "pqxx";
    case detail::driver_kind::mysql: return "mysqlcppconn";
    case detail::driver_kind::soci: return "soci";
  }
  return "unknown";
}

const std::string& database::table() const noexcept { return impl_->options().table; }

const std::string& database::display_uri() const noexcept { return impl_->spec().display; }

}  // namespace sqllock
