// SOCI's postgresql backend: opening, reading PGresults, libpq errors.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <soci/postgresql/soci-postgresql.h>

#include "driver/libpq_uri.hpp"
#include "driver/pg_statements.hpp"
#include "driver/server_error.hpp"
#include "driver/soci/soci_backend.hpp"
#include "driver/statement_cache.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

struct pg_result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using pg_result_ptr = std::unique_ptr<PGresult, pg_result_deleter>;

// The rows of `r` as libpq's text, and the rows it changed. The count comes from the command
// tag: PostgreSQL also counts the rows a SELECT returned ("SELECT 3"), which are not changes.
result to_result(const PGresult* r) {
  result out;
  if (r == nullptr) return out;
  const int rows = PQntuples(r);
  const int columns = PQnfields(r);
  out.rows.reserve(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) {
    row& fields = out.rows.emplace_back();
    fields.reserve(static_cast<std::size_t>(columns));
    for (int c = 0; c < columns; ++c) {
      if (PQgetisnull(r, i, c)) {
        fields.emplace_back();
      } else {
        fields.emplace_back(std::in_place, PQgetvalue(r, i, c), static_cast<std::size_t>(PQgetlength(r, i, c)));
      }
    }
  }
  const char* tag = PQcmdStatus(const_cast<PGresult*>(r));
  for (const char* changing : {"INSERT ", "UPDATE ", "DELETE ", "MERGE ", "COPY "}) {
    if (std::strncmp(tag, changing, std::strlen(changing)) == 0) {
      out.affected = std::strtoull(PQcmdTuples(const_cast<PGresult*>(r)), nullptr, 10);
    }
  }
  return out;
}

// `state` if it is a SQLSTATE (five digits or capitals), "" otherwise.
std::string valid_sqlstate(const std::string& state) {
  if (state.size() != 5) return {};
  for (char c : state) {
    if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'))) return {};
  }
  return state;
}

class postgresql_backend final : public soci_backend {
 public:
  // prepare: statements are prepared under names derived from their text; false runs them unnamed.
  postgresql_backend(std::unique_ptr<soci::session> session, bool prepare)
      : soci_backend(std::move(session)), prepare_(prepare) {}
  explicit postgresql_backend(soci::session& borrowed) : soci_backend(borrowed), prepare_(false) {}

  SQLLOCK_SOCI_DOWNCAST PGconn* native() noexcept {
    return static_cast<soci::postgresql_session_backend*>(session_->get_backend())->conn_;
  }

  bool text_may_contain_nul() const noexcept override { return false; }

  int socket() noexcept override {
    const PGconn* c = native();
    return c ? PQsocket(c) : -1;
  }

  result run_direct(std::string_view sql) override {
    pg_result_ptr r(PQexec(native(), std::string(sql).c_str()));
    check(r.get());
    return to_result(r.get());
  }

  // The cache entry of `sql`: named after its text when statements are prepared (?prepare=on).
  auto& cached(std::string_view sql, std::size_t param_count) {
    return statements_.get(
        sql, param_count,
        [&](const native_statement& native) {
          return prepared{prepare_ ? pg_statement_name(native.sql) : std::string(), false};
        },
        [&](prepared& p) {
          // Best effort: a statement left behind is harmless, its name always means its text.
          if (p.sent) pg_result_ptr(PQexec(native(), ("DEALLOCATE " + p.name).c_str()));
        });
  }

  // Prepares a named entry on the server unless done already; an unnamed one runs unprepared.
  void send_prepare(auto& entry, int param_count) {
    if (entry.handle.name.empty() || entry.handle.sent) return;
    pg_result_ptr p(PQprepare(native(), entry.handle.name.c_str(), entry.native.sql.c_str(), param_count, nullptr));
    check(p.get());
    entry.handle.sent = true;
  }

  bool runs_natively() const noexcept override { return true; }

  // libpq directly rather than SOCI: SOCI names its prepared statements "st_1", "st_2", … per
  // session, which a transaction-mode pooler mixes up between clients (driver/pg_statements.hpp).
  void prepare_native(std::string_view sql, std::size_t param_count) override {
    auto& entry = cached(sql, param_count);
    send_prepare(entry, static_cast<int>(param_count));
  }

  result run_native(std::string_view sql, std::span<const value> params) override {
    auto& entry = cached(sql, params.size());
    std::vector<std::string> storage;
    std::vector<const char*> texts;
    storage.reserve(params.size());
    texts.reserve(params.size());
    for (const value& v : params) {
      if (const auto* text = std::get_if<std::string>(&v)) {
        // libpq would silently cut the value short at the NUL.
        if (text->find('\0') != std::string::npos) throw invalid_argument("PostgreSQL text cannot contain NUL bytes");
        texts.push_back(text->c_str());
      } else if (const auto* number = std::get_if<std::int64_t>(&v)) {
        texts.push_back(storage.emplace_back(std::to_string(*number)).c_str());
      } else {
        texts.push_back(nullptr);
      }
    }
    const int count = static_cast<int>(texts.size());
    PGconn* c = native();
    pg_result_ptr r;
    if (entry.handle.name.empty()) {
      r.reset(PQexecParams(c, entry.native.sql.c_str(), count, nullptr, texts.data(), nullptr, nullptr, 0));
    } else {
      send_prepare(entry, count);
      r.reset(PQexecPrepared(c, entry.handle.name.c_str(), count, texts.data(), nullptr, nullptr, 0));
    }
    check(r.get());
    return to_result(r.get());
  }

  bool receives_notifications() const noexcept override { return true; }

  void listen(const std::string& channel) override {
    std::string quoted = "\"";
    for (char c : channel) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    run_direct("LISTEN " + quoted + "\"");
  }

  std::vector<std::string> await_notifications(std::chrono::milliseconds timeout) override {
    PGconn* c = native();
    std::vector<std::string> payloads;
    const auto drain = [&] {
      // "08006": the connection failed, so classify() marks it broken.
      if (PQconsumeInput(c) == 0) throw soci::postgresql_soci_error(PQerrorMessage(c), "08006");
      while (PGnotify* n = PQnotifies(c)) {
        payloads.emplace_back(n->extra);
        PQfreemem(n);
      }
    };
    drain();  // some may have arrived with an earlier statement's reply
    if (!payloads.empty()) return payloads;
    pollfd fd{PQsocket(c), POLLIN, 0};
    if (fd.fd < 0) throw soci::postgresql_soci_error("the connection has no socket", "08006");
    const auto ms = std::clamp<std::int64_t>(timeout.count(), 0, std::numeric_limits<int>::max());
    const int ready = ::poll(&fd, 1, static_cast<int>(ms));
    if (ready < 0 && errno != EINTR) throw soci::postgresql_soci_error(std::strerror(errno), "08006");
    if (ready > 0) drain();
    return payloads;
  }

  soci_failure classify(const soci::soci_error& e) override {
    soci_failure f;
    f.message = soci_trimmed(e.get_error_message());
    // SOCI puts "Cannot execute query. Fatal error. " before libpq's message, which is the news.
    if (const auto at = f.message.find("Fatal error. "); at != std::string::npos) f.message.erase(0, at + 13);
    if (const auto* pg = dynamic_cast<const soci::postgresql_soci_error*>(&e)) {
      f.sqlstate = valid_sqlstate(pg->sqlstate());
    }
    // Class 08 is "connection exception"; 57P01-57P03 are the server ending or refusing the
    // session (pg_terminate_backend, shutdown, startup). libpq's status catches the rest, e.g. a
    // socket closed without any message.
    const bool session_ended = f.sqlstate.rfind("08", 0) == 0 || f.sqlstate == "57P01" || f.sqlstate == "57P02" ||
                               f.sqlstate == "57P03";
    f.connection_lost = session_ended || PQstatus(native()) != CONNECTION_OK ||
                        e.get_error_category() == soci::soci_error::connection_error;
    f.permission_denied = is_postgresql_permission_error(f.sqlstate);
    if (is_pg_read_only_error(f.sqlstate)) f.discard = true;  // a demoted primary: never reuse it
    if (prepare_ && !f.connection_lost && is_pg_statement_name_error(f.sqlstate)) {
      f.message += pg_statement_name_hint();
      f.discard = true;  // the cache's record of what this session prepared is wrong
    }
    return f;
  }

 private:
  struct prepared {
    std::string name;   // empty: run unnamed
    bool sent = false;  // prepared on the server session
  };

  // Throws the error `r` reports (a null `r`: the connection's), as SOCI's own exception so that
  // classify() treats SOCI's and these native paths alike.
  void check(const PGresult* r) {
    const ExecStatusType status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY) return;
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string message = r ? PQresultErrorMessage(r) : PQerrorMessage(native());
    throw soci::postgresql_soci_error(message, state != nullptr && std::strlen(state) == 5 ? state : "     ");
  }

  const bool prepare_;
  statement_cache<prepared> statements_{placeholder_style::dollar};
};

}  // namespace

std::unique_ptr<soci_backend> borrow_soci_postgresql(soci::session& session) {
  return std::make_unique<postgresql_backend>(session);
}

std::unique_ptr<soci_backend> open_soci_postgresql(const connection_spec& spec, std::chrono::milliseconds timeout) {
  // SOCI hands the connect string to PQconnectdb unchanged, so a libpq URI works as is.
  auto session = std::make_unique<soci::session>(soci::postgresql,
                                                 libpq_uri_with_connect_timeout(spec.native_uri, timeout));
  auto backend = std::make_unique<postgresql_backend>(std::move(session), spec.prepare_statements);
  // libpq prints server NOTICEs (e.g. "table … does not exist, skipping") on stderr by default.
  // clang-format 14 would wrap this call oddly around the empty lambda.
  // clang-format off
  PQsetNoticeProcessor(backend->native(), [](void*, const char*) {}, nullptr);
  // clang-format on
  return backend;
}

}  // namespace sqllock::detail
