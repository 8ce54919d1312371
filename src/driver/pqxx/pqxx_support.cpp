#include "driver/pqxx/pqxx_support.hpp"

#include <utility>
#include <variant>

#include <pqxx/except>

#include "driver/pg_statements.hpp"
#include "driver/server_error.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

[[noreturn]] void fail_broken(const std::string& display, bool& broken, const std::string& what) {
  broken = true;
  throw connection_error("connection to " + display + " lost: " + what +
                         " (the pool opens a new connection; retry the operation)");
}

[[noreturn]] void report(const pqxx::connection_base& conn, const std::string& display, bool& broken,
                         const char* message, std::string sqlstate) {
  // After any error, a connection that is no longer open is broken whatever pqxx called it.
  if (!conn.is_open()) fail_broken(display, broken, pqxx_message(message));
  if (is_pg_read_only_error(sqlstate)) broken = true;  // a demoted primary: never reuse it
  const bool permission = is_postgresql_permission_error(sqlstate);
  throw_server_error(pqxx_message(message), std::move(sqlstate), 0, permission);
}

}  // namespace

std::string pqxx_message(const char* what) {
  std::string text(what);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

result pqxx_to_result(const pqxx::result& r, bool query) {
  result out;
  out.rows.reserve(r.size());
  for (const auto& tuple : r) {
    row& fields = out.rows.emplace_back();
    fields.reserve(tuple.size());
    for (const auto& f : tuple) {
      fields.push_back(f.is_null() ? field{} : field{std::in_place, f.c_str(), f.size()});
    }
  }
  if (!query) out.affected = r.affected_rows();
  return out;
}

std::vector<const char*> pqxx_parameter_texts(std::span<const value> params, std::vector<std::string>& storage) {
  std::vector<const char*> texts;
  texts.reserve(params.size());
  storage.reserve(params.size());
  for (const value& v : params) {
    if (const auto* text = std::get_if<std::string>(&v)) {
      if (text->find('\0') != std::string::npos) {
        throw invalid_argument("PostgreSQL text cannot contain NUL bytes");
      }
      texts.push_back(text->c_str());
    } else if (const auto* number = std::get_if<std::int64_t>(&v)) {
      texts.push_back(storage.emplace_back(std::to_string(*number)).c_str());
    } else {
      texts.push_back(nullptr);
    }
  }
  return texts;
}

void rethrow_pqxx_error(const pqxx::connection_base& conn, const std::string& display, bool& broken) {
  try {
    throw;
  } catch (const pqxx::broken_connection& e) {
    fail_broken(display, broken, pqxx_message(e.what()));
  } catch (const pqxx::insufficient_privilege& e) {
    // libpqxx 6 throws this class without its SQLSTATE; restore it (before sql_error, its base).
    report(conn, display, broken, e.what(), e.sqlstate().empty() ? "42501" : e.sqlstate());
  } catch (const pqxx::sql_error& e) {
    report(conn, display, broken, e.what(), e.sqlstate());
  } catch (const pqxx::deadlock_detected& e) {
    // libpqxx 6 turns SQLSTATE class 40 into these classes and drops the code; restore it.
    report(conn, display, broken, e.what(), "40P01");
  } catch (const pqxx::serialization_failure& e) {
    report(conn, display, broken, e.what(), "40001");
  } catch (const pqxx::statement_completion_unknown& e) {
    report(conn, display, broken, e.what(), "40003");
  } catch (const pqxx::transaction_rollback& e) {
    report(conn, display, broken, e.what(), "40000");
  } catch (const pqxx::pqxx_exception& e) {
    report(conn, display, broken, e.base().what(), "");
  }
}

}  // namespace sqllock::detail
