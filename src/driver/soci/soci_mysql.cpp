// SOCI's mysql backend (over libmariadb): opening, reading MYSQL_RES results, MySQL errors.
#include <algorithm>
#include <memory>
#include <string>

#include <soci/mysql/soci-mysql.h>

#include "driver/mysql_errors.hpp"
#include "driver/soci/soci_backend.hpp"
#include "driver/statement_kind.hpp"

namespace sqllock::detail {
namespace {

struct mysql_closer {
  void operator()(MYSQL* m) const noexcept { mysql_close(m); }
};
using mysql_ptr = std::unique_ptr<MYSQL, mysql_closer>;

struct mysql_result_deleter {
  void operator()(MYSQL_RES* r) const noexcept { mysql_free_result(r); }
};
using mysql_result_ptr = std::unique_ptr<MYSQL_RES, mysql_result_deleter>;

[[noreturn]] void throw_last_error(MYSQL* conn) {
  throw soci::mysql_soci_error(mysql_error(conn), static_cast<int>(mysql_errno(conn)));
}

// The rows of `res` (may be null) as the server's text, and, unless the statement is a query,
// the rows it changed (for a query, libmariadb counts the rows returned).
result to_result(MYSQL* conn, MYSQL_RES* res, bool query) {
  result out;
  if (res != nullptr) {
    mysql_data_seek(res, 0);  // SOCI may already have walked the result
    const unsigned columns = mysql_num_fields(res);
    while (MYSQL_ROW values = mysql_fetch_row(res)) {
      const unsigned long* lengths = mysql_fetch_lengths(res);
      row& fields = out.rows.emplace_back();
      fields.reserve(columns);
      for (unsigned c = 0; c < columns; ++c) {
        if (values[c] == nullptr) {
          fields.emplace_back();
        } else {
          fields.emplace_back(std::in_place, values[c], lengths[c]);
        }
      }
    }
  }
  if (!query) {
    const my_ulonglong changed = mysql_affected_rows(conn);
    if (changed != static_cast<my_ulonglong>(-1)) out.affected = changed;
  }
  return out;
}

// `value` quoted for SOCI's mysql connect-string parser ('…' with backslash escapes).
std::string quoted(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string soci_connect_string(const connection_spec& spec, unsigned seconds) {
  std::string out = "charset=utf8mb4 connect_timeout=" + std::to_string(seconds);
  if (!spec.host.empty()) out += " host=" + quoted(spec.host);
  if (spec.port) out += " port=" + std::to_string(*spec.port);
  if (!spec.user.empty()) out += " user=" + quoted(spec.user);
  if (!spec.password.empty()) out += " password=" + quoted(spec.password);
  if (!spec.database.empty()) out += " db=" + quoted(spec.database);
  if (const auto socket = spec.param("socket")) out += " unix_socket=" + quoted(*socket);
  return out;
}

// A session opened the way sqllock needs it: no automatic reconnection (a new session would have
// silently lost every GET_LOCK lock of the old one) and without CLIENT_FOUND_ROWS, so that an
// UPDATE reports the rows it changed, not the rows it matched.
mysql_ptr connect_native(const connection_spec& spec, unsigned seconds) {
  mysql_ptr conn(mysql_init(nullptr));
  if (!conn) throw soci::soci_error("mysql_init failed: out of memory");
  my_bool reconnect = 0;
  mysql_options(conn.get(), MYSQL_OPT_CONNECT_TIMEOUT, &seconds);
  mysql_options(conn.get(), MYSQL_OPT_RECONNECT, &reconnect);
  mysql_options(conn.get(), MYSQL_SET_CHARSET_NAME, "utf8mb4");
  const auto socket = spec.param("socket");
  auto or_null = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
  if (mysql_real_connect(conn.get(), or_null(spec.host), or_null(spec.user), or_null(spec.password),
                         or_null(spec.database), static_cast<unsigned>(spec.port.value_or(0)),
                         socket ? socket->c_str() : nullptr, CLIENT_MULTI_RESULTS) == nullptr) {
    throw_last_error(conn.get());
  }
  return conn;
}

SQLLOCK_SOCI_DOWNCAST MYSQL_RES* last_result(soci::statement& st) noexcept {
  return static_cast<soci::mysql_statement_backend*>(st.get_backend())->result_;
}

class mysql_backend final : public soci_backend {
 public:
  explicit mysql_backend(std::unique_ptr<soci::session> session) : soci_backend(std::move(session)) {}
  explicit mysql_backend(soci::session& borrowed) : soci_backend(borrowed) {}

  SQLLOCK_SOCI_DOWNCAST MYSQL*& native() noexcept {
    return static_cast<soci::mysql_session_backend*>(session_->get_backend())->conn_;
  }

  int socket() noexcept override {
    MYSQL* c = native();
    return c ? static_cast<int>(mysql_get_socket(c)) : -1;
  }

  result run(soci_statement& st) override {
    st.statement.execute(false);  // no into() elements: SOCI leaves the rows in its MYSQL_RES
    return to_result(native(), last_result(st.statement), st.query);
  }

  result run_direct(std::string_view sql) override {
    MYSQL* conn = native();
    if (mysql_real_query(conn, sql.data(), static_cast<unsigned long>(sql.size())) != 0) throw_last_error(conn);
    const bool query = is_query_statement(sql);
    result out;
    // A CALL may produce several results: keep the rows of the last result set and the count
    // of the last status.
    for (;;) {
      mysql_result_ptr res(mysql_store_result(conn));
      if (!res && mysql_field_count(conn) != 0) throw_last_error(conn);
      result current = to_result(conn, res.get(), query);
      if (res) out.rows = std::move(current.rows);
      out.affected = current.affected;
      const int next = mysql_next_result(conn);
      if (next > 0) throw_last_error(conn);
      if (next < 0) break;
    }
    return out;
  }

  soci_failure classify(const soci::soci_error& e) override {
    soci_failure f;
    f.message = soci_trimmed(e.get_error_message());
    MYSQL* conn = native();
    if (const auto* my = dynamic_cast<const soci::mysql_soci_error*>(&e)) {
      f.vendor_code = my->err_num_;
      if (mysql_errno(conn) == my->err_num_) f.sqlstate = mysql_sqlstate(conn);
    }
    // A client-side error not known to end the session is checked with a ping (reconnection is
    // off, so the ping cannot replace the session).
    f.connection_lost = e.get_error_category() == soci::soci_error::connection_error ||
                        is_mysql_connection_loss(f.vendor_code) ||
                        (is_mysql_client_error(f.vendor_code) && mysql_ping(conn) != 0);
    f.permission_denied = is_mysql_permission_error(f.vendor_code);
    return f;
  }
};

}  // namespace

std::unique_ptr<soci_backend> borrow_soci_mysql(soci::session& session) {
  return std::make_unique<mysql_backend>(session);
}

std::unique_ptr<soci_backend> open_soci_mysql(const connection_spec& spec, std::chrono::milliseconds timeout) {
  const auto seconds = static_cast<unsigned>(std::max<long long>(1, (timeout.count() + 999) / 1000));
  auto session = std::make_unique<soci::session>(soci::mysql, soci_connect_string(spec, seconds));
  auto backend = std::make_unique<mysql_backend>(std::move(session));
  // SOCI 4.0 always connects with CLIENT_FOUND_ROWS and offers no way to turn it off, and the flag
  // is fixed for the life of a session. So a second session is opened with the right flags and
  // handed to SOCI's backend in place of its own; SOCI reads the handle on every call and keeps
  // no other state about it. The cost is one extra connect per connection opened.
  mysql_ptr own = connect_native(spec, seconds);
  MYSQL*& slot = backend->native();
  mysql_close(slot);
  slot = own.release();
  return backend;
}

}  // namespace sqllock::detail
