// SOCI's sqlite3 backend: opening the file, reading rows from the sqlite3_stmt, SQLite errors.
#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <charconv>
#include <memory>
#include <string>

#include <soci/sqlite3/soci-sqlite3.h>

#include "driver/soci/soci_backend.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// SOCI includes sqlite3.h inside this namespace; these names keep the calls short.
using sqlite_api::sqlite3;
using sqlite_api::sqlite3_stmt;

struct stmt_finalizer {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite_api::sqlite3_finalize(s); }
};
using stmt_ptr = std::unique_ptr<sqlite3_stmt, stmt_finalizer>;

// How long a statement waits for another connection's lock before failing with SQLITE_BUSY. Many
// processes share one file and a lock is held only for one short transaction, so waiting is
// almost always right; ten seconds stays well clear of a hung writer.
constexpr int kBusyTimeoutMs = 10000;

// The current row of `stmt`, each value by its storage class: integers in decimal, reals in the
// shortest text that reads back to the same double, text and blobs as their bytes.
row read_row(sqlite3_stmt* stmt) {
  const int columns = sqlite_api::sqlite3_column_count(stmt);
  row out;
  out.reserve(static_cast<std::size_t>(columns));
  for (int c = 0; c < columns; ++c) {
    switch (sqlite_api::sqlite3_column_type(stmt, c)) {
      case SQLITE_NULL: out.emplace_back(); break;
      case SQLITE_INTEGER: out.emplace_back(std::to_string(sqlite_api::sqlite3_column_int64(stmt, c))); break;
      case SQLITE_FLOAT: {
        char buffer[32];
        const auto end = std::to_chars(buffer, buffer + sizeof buffer, sqlite_api::sqlite3_column_double(stmt, c)).ptr;
        out.emplace_back(std::in_place, buffer, end);
        break;
      }
      default: {  // SQLITE_TEXT, SQLITE_BLOB: take the pointer first, then the length
        const void* bytes = sqlite_api::sqlite3_column_blob(stmt, c);
        const auto size = static_cast<std::size_t>(sqlite_api::sqlite3_column_bytes(stmt, c));
        out.emplace_back(std::in_place, static_cast<const char*>(bytes), size);
      }
    }
  }
  return out;
}

// Rows changed by the statement that just completed. sqlite3_changes() keeps the count of the
// last INSERT/UPDATE/DELETE, so it is stale after a SELECT, BEGIN or DDL; the total only moves
// when this statement changed something.
std::uint64_t changed_rows(sqlite3* db, sqlite_api::sqlite3_int64 total_before) {
  if (sqlite_api::sqlite3_total_changes64(db) == total_before) return 0;
  return static_cast<std::uint64_t>(sqlite_api::sqlite3_changes64(db));
}

class sqlite_backend final : public soci_backend {
 public:
  explicit sqlite_backend(std::unique_ptr<soci::session> session) : soci_backend(std::move(session)) {}
  explicit sqlite_backend(soci::session& borrowed) : soci_backend(borrowed) {}

  SQLLOCK_SOCI_DOWNCAST sqlite3* native() noexcept {
    return static_cast<soci::sqlite3_session_backend*>(session_->get_backend())->conn_;
  }

  void define_columns(soci_statement& st, std::string_view sql) override {
    sqlite3_stmt* stmt = statement_of(st);
    // sqlite3_prepare_v2 compiles the first statement and ignores the rest; PostgreSQL and MySQL
    // refuse several statements in one prepared statement, so SQLite must not run half of them.
    const char* prepared = sqlite_api::sqlite3_sql(stmt);
    const std::string_view rest = sql.substr(std::min(sql.size(), std::string_view(prepared ? prepared : "").size()));
    if (rest.find_first_not_of(" \t\r\n;") != std::string_view::npos) {
      throw invalid_argument("exec() runs one statement, but the SQL holds more: " + std::string(sql));
    }
    const auto columns = static_cast<std::size_t>(sqlite_api::sqlite3_column_count(stmt));
    st.column_sinks.resize(columns);
    st.column_indicators.resize(columns, soci::i_ok);
    for (std::size_t c = 0; c < columns; ++c) {
      st.statement.exchange(soci::into(st.column_sinks[c], st.column_indicators[c]));
    }
  }

  result run(soci_statement& st) override {
    sqlite3* db = native();
    sqlite3_stmt* stmt = statement_of(st);
    const auto total_before = sqlite_api::sqlite3_total_changes64(db);
    result out;
    try {
      // Each execute()/fetch() steps once; the row it stepped to stays readable in `stmt`.
      for (bool got = st.statement.execute(true); got; got = st.statement.fetch()) {
        out.rows.push_back(read_row(stmt));
      }
    } catch (...) {
      // A statement stopped half-way keeps its read transaction open, which would block
      // checkpoints (and writers) until it is reused.
      sqlite_api::sqlite3_reset(stmt);
      throw;
    }
    out.affected = changed_rows(db, total_before);
    return out;
  }

  result run_direct(std::string_view sql) override {
    sqlite3* db = native();
    const char* next = sql.data();
    const char* const end = sql.data() + sql.size();
    result out;
    // Runs every statement in `sql`, like PostgreSQL's simple protocol; the last one's rows win.
    while (next < end) {
      sqlite3_stmt* raw = nullptr;
      const char* tail = nullptr;
      const int prepared = sqlite_api::sqlite3_prepare_v2(db, next, static_cast<int>(end - next), &raw, &tail);
      stmt_ptr stmt(raw);
      if (prepared != SQLITE_OK) throw soci::sqlite3_soci_error(sqlite_api::sqlite3_errmsg(db), prepared);
      next = tail;
      if (!stmt) continue;  // only blanks or comments were left
      const auto total_before = sqlite_api::sqlite3_total_changes64(db);
      result current;
      int step;
      while ((step = sqlite_api::sqlite3_step(stmt.get())) == SQLITE_ROW) current.rows.push_back(read_row(stmt.get()));
      if (step != SQLITE_DONE) throw soci::sqlite3_soci_error(sqlite_api::sqlite3_errmsg(db), step);
      current.affected = changed_rows(db, total_before);
      out = std::move(current);
    }
    return out;
  }

  soci_failure classify(const soci::soci_error& e) override {
    soci_failure f;
    f.message = soci_trimmed(e.get_error_message());
    // SOCI prefixes SQLite's message with its own function name ("sqlite3_statement_backend::…: ").
    if (f.message.rfind("sqlite3_", 0) == 0) {
      if (const auto colon = f.message.find(": "); colon != std::string::npos) f.message.erase(0, colon + 2);
    }
    if (const auto* lite = dynamic_cast<const soci::sqlite3_soci_error*>(&e)) {
      // Extended result codes are on, so this is normally the extended code already; if SOCI
      // passed the primary one, the connection still knows the extended form.
      const int code = lite->result();
      const int extended = sqlite_api::sqlite3_extended_errcode(native());
      f.vendor_code = (extended & 0xff) == (code & 0xff) ? extended : code;
    }
    // A local file has no session to lose: SQLITE_BUSY that outlived the busy timeout, a full
    // disk or a corrupt file are all reported as backend errors.
    return f;
  }

 private:
  SQLLOCK_SOCI_DOWNCAST static sqlite3_stmt* statement_of(soci_statement& st) noexcept {
    return static_cast<soci::sqlite3_statement_backend*>(st.statement.get_backend())->stmt_;
  }
};

// Switches the file to WAL mode (a no-op once it is). Changing the journal mode needs an exclusive
// lock; when another connection is mid-upgrade SQLite reports SQLITE_BUSY at once, without calling
// the busy handler (waiting could deadlock), so the first processes to open a new file must retry.
void enable_wal(sqlite_backend& backend) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  while (true) {
    try {
      const auto mode = backend.run_direct("PRAGMA journal_mode");
      if (!mode.rows.empty() && !mode.rows[0].empty() && mode.rows[0][0] == std::optional<std::string>("wal")) return;
      backend.run_direct("PRAGMA journal_mode = WAL");
      return;
    } catch (const soci::sqlite3_soci_error& e) {  // translated by the caller
      if ((e.result() & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= give_up) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

}  // namespace

std::unique_ptr<soci_backend> borrow_soci_sqlite(soci::session& session) {
  return std::make_unique<sqlite_backend>(session);
}

std::unique_ptr<soci_backend> open_soci_sqlite(const connection_spec& spec) {
  // SOCI's sqlite3 connect string quotes values with '"' and has no escape for it.
  if (spec.path.find('"') != std::string::npos) {
    throw invalid_argument("SQLite file paths containing '\"' are not supported: " + spec.path);
  }
  // SOCI opens with SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE: a missing file is created (its
  // directory must exist).
  auto session = std::make_unique<soci::session>(soci::sqlite3, "db=\"" + spec.path + "\"");
  auto backend = std::make_unique<sqlite_backend>(std::move(session));
  sqlite3* db = backend->native();
  sqlite_api::sqlite3_extended_result_codes(db, 1);
  sqlite_api::sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // WAL lets readers and one writer work at once across processes. synchronous=NORMAL in WAL
  // mode syncs at checkpoints, not at every commit: a committed transaction survives the crash
  // of any process (the WAL file is on disk, only not yet fsynced), and only an OS crash or power
  // loss can roll back the last few commits, never corrupt the file.
  enable_wal(*backend);
  backend->run_direct("PRAGMA synchronous = NORMAL");
  return backend;
}

}  // namespace sqllock::detail
