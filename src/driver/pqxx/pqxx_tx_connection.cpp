#include "driver/pqxx/pqxx_tx_connection.hpp"

#include <algorithm>
#include <vector>

#include <pqxx/except>
#include <pqxx/prepared_statement>
#include <pqxx/result>

#include "driver/placeholders.hpp"
#include "driver/pqxx/pqxx_support.hpp"
#include "driver/statement_kind.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// The number of parameters `sql` asks for ($N with the highest N), so that a miscounted call is
// reported the same way as by the pooled connections (statement_cache.hpp).
void check_arity(std::string_view sql, std::size_t given) {
  std::size_t wanted = 0;
  for (std::size_t index : rewrite_placeholders(sql, placeholder_style::dollar).order)
    wanted = std::max(wanted, index + 1);
  if (given != wanted) {
    throw invalid_argument("statement takes " + std::to_string(wanted) + " parameter(s) but " + std::to_string(given) +
                           " were passed: " + std::string(sql));
  }
}

}  // namespace

result pqxx_tx_connection::exec(std::string_view sql, std::span<const value> params) {
  return guarded([&] {
    check_arity(sql, params.size());
    std::vector<std::string> storage;
    const std::vector<const char*> texts = pqxx_parameter_texts(params, storage);
    return pqxx_to_result(tx_.exec_params(std::string(sql), pqxx::prepare::make_dynamic_params(texts)),
                          is_query_statement(sql));
  });
}

result pqxx_tx_connection::exec_direct(std::string_view sql) {
  return guarded([&] { return pqxx_to_result(tx_.exec(std::string(sql)), is_query_statement(sql)); });
}

template <class F>
result pqxx_tx_connection::guarded(F&& run) {
  if (broken_) throw connection_error(display_ + " is broken; use a new one");
  try {
    return run();
  } catch (const pqxx::pqxx_exception&) {
    rethrow_pqxx_error(tx_.conn(), display_, broken_);
  }
}

}  // namespace sqllock::detail
