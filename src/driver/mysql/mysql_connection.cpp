#include "driver/mysql/mysql_connection.hpp"

#include <utility>

#include "driver/abandon.hpp"
#include "driver/mysql_errors.hpp"
#include "driver/server_error.hpp"
#include "driver/mysql/cppconn.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

result read_rows(sql::ResultSet& rs) {
  result out;
  const unsigned columns = rs.getMetaData()->getColumnCount();  // owned by rs
  while (rs.next()) {
    row& fields = out.rows.emplace_back();
    fields.reserve(columns);
    for (unsigned c = 1; c <= columns; ++c) {
      // getString keeps embedded NUL bytes, so VARBINARY values come back intact.
      sql::SQLString text = rs.getString(c);
      if (rs.wasNull()) {
        fields.emplace_back();
      } else {
        fields.emplace_back(std::in_place, text.asStdString());
      }
    }
  }
  return out;
}

void bind(sql::PreparedStatement& ps, unsigned index, const value& v) {
  if (const auto* text = std::get_if<std::string>(&v)) {
    ps.setString(index, *text);
  } else if (const auto* number = std::get_if<std::int64_t>(&v)) {
    ps.setInt64(index, *number);
  } else {
    ps.setNull(index, 0);  // the SQL type is ignored: MySQL infers it
  }
}

}  // namespace

mysql_connection::mysql_connection(std::unique_ptr<sql::Connection> native, std::string display,
                                   std::optional<found_socket> socket)
    : native_(std::move(native)), statements_(placeholder_style::question), display_(std::move(display)),
      socket_(socket) {}

mysql_connection::mysql_connection(sql::Connection& borrowed, std::string display)
    : native_(&borrowed), statements_(placeholder_style::question), display_(std::move(display)), borrowed_(true) {}

mysql_connection::~mysql_connection() {
  // Prepared statements are closed (members, after this body) on the application's session,
  // which outlives this object; the session itself is not ours to close.
  if (borrowed_) (void)native_.release();
}

statement_cache<std::unique_ptr<sql::PreparedStatement>>::entry& mysql_connection::cached(std::string_view sql,
                                                                                          std::size_t param_count) {
  return statements_.get(
      sql, param_count,
      [&](const native_statement& native) {
        return std::unique_ptr<sql::PreparedStatement>(native_->prepareStatement(native.sql));
      },
      [](std::unique_ptr<sql::PreparedStatement>& ps) { ps.reset(); });
}

void mysql_connection::prepare(std::string_view sql, std::size_t param_count) {
  guarded([&] {
    cached(sql, param_count);
    return result{};
  });
}

result mysql_connection::exec(std::string_view sql, std::span<const value> params) {
  return guarded([&] {
    auto& statement = cached(sql, params.size());
    sql::PreparedStatement& ps = *statement.handle;
    const auto& order = statement.native.order;
    for (std::size_t i = 0; i < order.size(); ++i) {
      bind(ps, static_cast<unsigned>(i + 1), params[order[i]]);
    }
    // Connector/C++ 1.1 cannot report a prepared statement's update count after execute(), so
    // pick the call by whether the statement has result columns (known since it was prepared).
    if (ps.getMetaData()->getColumnCount() > 0) {  // metadata is owned by ps
      std::unique_ptr<sql::ResultSet> rs(ps.executeQuery());
      return read_rows(*rs);
    }
    const int affected = ps.executeUpdate();
    if (affected != -1) {
      result out;
      out.affected = static_cast<std::uint64_t>(affected);
      return out;
    }
    // -1: rows follow after all. MariaDB announces the columns of INSERT/DELETE … RETURNING only
    // on execution; each returned row is one affected row. Reading them keeps the session in sync.
    std::unique_ptr<sql::ResultSet> rs(ps.getResultSet());
    result out = read_rows(*rs);
    out.affected = out.rows.size();
    return out;
  });
}

result mysql_connection::exec_direct(std::string_view sql) {
  return guarded([&] {
    std::unique_ptr<sql::Statement> statement(native_->createStatement());
    if (statement->execute(std::string(sql))) {
      std::unique_ptr<sql::ResultSet> rs(statement->getResultSet());
      return read_rows(*rs);
    }
    result out;
    out.affected = statement->getUpdateCount();
    return out;
  });
}

void mysql_connection::abandon() noexcept {
  broken_ = true;
  // Destroying a prepared statement sends COM_STMT_CLOSE and destroying the connection sends
  // COM_QUIT, both on the parent's session; leak them instead. Connector/C++ 1.1 does not expose
  // the socket, so the child keeps its copy of the descriptor until it exits.
  statements_.clear([](std::unique_ptr<sql::PreparedStatement>& ps) { leak_on_purpose(ps); });
  leak_on_purpose(native_);
}

template <class F>
result mysql_connection::guarded(F&& run) {
  if (broken_) {
    throw connection_error("connection to " + display_ + " is broken or was abandoned; use a new one");
  }
  try {
    return run();
  } catch (const sql::SQLException& e) {
    report(e);
  }
}

bool mysql_connection::session_closed() noexcept {
  try {
    return native_->isClosed();
  } catch (const sql::SQLException&) {
    return true;
  }
}

void mysql_connection::report(const sql::SQLException& e) {
  const int code = e.getErrorCode();
  // Connector/C++'s own exceptions carry code 0 and, like client errors, may hide a dead
  // session. isClosed() pings the server in Connector/C++ 1.1, so it is asked only then.
  const bool unclear = code == 0 || is_mysql_client_error(code);
  if (is_mysql_connection_loss(code) || (unclear && session_closed())) {
    broken_ = true;
    throw connection_error("connection to " + display_ + " lost: " + e.what() + " (error " + std::to_string(code) +
                           "; the pool opens a new connection; retry the operation)");
  }
  throw_server_error(e.what(), e.getSQLState(), code, is_mysql_permission_error(code));
}

}  // namespace sqllock::detail
