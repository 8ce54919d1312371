#include "core/handle/transaction.hpp"

#include <algorithm>

#include "core/handle/error_translation.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

bool exec_quietly(connection& conn, const std::string& statement) noexcept {
  try {
    if (conn.broken()) return false;
    conn.exec_direct(statement);
    return true;
  } catch (...) {
    return false;
  }
}

// ---- transaction

transaction::transaction(connection& conn, const transaction_sql& sql) : conn_(&conn), sql_(&sql) {
  conn_->exec_direct(sql_->begin);
  open_ = true;
}

transaction::~transaction() { end_quietly(); }

transaction::transaction(transaction&& other) noexcept : conn_(other.conn_), sql_(other.sql_), open_(other.open_) {
  other.open_ = false;
}

void transaction::commit(std::string_view unknown) {
  open_ = false;
  try {
    conn_->exec_direct(sql_->commit);
  } catch (const connection_error& e) {
    rethrow_outcome_unknown(e, unknown);
  } catch (const backend_error&) {
    exec_quietly(*conn_, sql_->rollback);
    throw;
  }
}

void transaction::rollback() {
  open_ = false;
  conn_->exec_direct(sql_->rollback);
}

bool transaction::end_quietly() noexcept {
  if (!open_) return true;
  open_ = false;
  return exec_quietly(*conn_, sql_->rollback);
}

// ---- savepoint

savepoint::savepoint(connection& conn, const savepoint_sql& sql) : conn_(conn), sql_(sql) {
  conn_.exec_direct(sql_.create);
}

savepoint::~savepoint() { undo_quietly(); }

void savepoint::keep() {
  open_ = false;
  conn_.exec_direct(sql_.release);
}

void savepoint::undo() {
  open_ = false;
  conn_.exec_direct(sql_.rollback_to);
  conn_.exec_direct(sql_.release);
}

bool savepoint::undo_quietly() noexcept {
  if (!open_) return true;
  open_ = false;
  const bool back = exec_quietly(conn_, sql_.rollback_to);
  return exec_quietly(conn_, sql_.release) && back;
}

// ---- lock_wait_bound

void lock_wait_bound::apply(std::int64_t units) {
  if (undo_ == undo_by::restore && !changed_ && sql_.reset.empty()) {
    // Read the setting to restore, once (a plain SELECT of a variable: no table, no snapshot).
    const auto r = conn_.exec(sql_.get, {});
    previous_ = r.rows.empty() || r.rows[0].empty() ? std::string() : r.rows[0][0].value_or("");
    if (previous_->empty()) throw backend_error("the server did not report its lock wait timeout", "", 0);
  }
  const value params[] = {units};
  conn_.exec(sql_.set, params);
  changed_ = undo_ == undo_by::restore;
}

std::int64_t lock_wait_units(const lock_wait_sql& sql, std::chrono::steady_clock::duration limit) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(limit).count();
  return std::clamp<std::int64_t>(ms / sql.unit_ms + (ms % sql.unit_ms > 0 ? 1 : 0), sql.min, sql.max);
}

void lock_wait_bound::set(std::chrono::steady_clock::duration limit) { apply(lock_wait_units(sql_, limit)); }

void lock_wait_bound::set_unlimited() { apply(sql_.unlimited); }

void lock_wait_bound::set_shortest() { apply(sql_.shortest); }

void lock_wait_bound::restore() {
  if (!changed_) return;
  changed_ = false;
  if (!sql_.reset.empty()) {
    conn_.exec_direct(sql_.reset);
    return;
  }
  const value params[] = {*previous_};
  conn_.exec(sql_.restore, params);
}

bool lock_wait_bound::restore_quietly() noexcept {
  try {
    if (!changed_) return true;
    if (conn_.broken()) return false;
    restore();
    return true;
  } catch (...) {
    return false;
  }
}

void lock_wait_bound::rolled_back() noexcept {
  if (sql_.transaction_local) changed_ = false;
}

}  // namespace sqllock::detail
