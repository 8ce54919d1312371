#include "core/handle/error_translation.hpp"

#include <string>

#include "dialect/dialect.hpp"

namespace sqllock::detail {
namespace {

std::string victim_message(const failure_context& context, std::string_view what_happened, const backend_error& e) {
  std::string m(context.subject);
  m.append(": ").append(what_happened).append(" and rolled back ").append(context.rolled_back);
  m.append("; retry ").append(context.retry).append(" (").append(e.what()).append(")");
  return m;
}

}  // namespace

bool is_transaction_rollback(dialect_kind dialect, const backend_error& e) {
  const error_kind kind = classify(dialect, e);
  return kind == error_kind::deadlock || kind == error_kind::serialization;
}

void throw_if_rolled_back(dialect_kind dialect, const backend_error& e, const failure_context& context) {
  if (dynamic_cast<const transaction_rollback*>(&e) != nullptr) return;  // already typed: the caller rethrows it
  switch (classify(dialect, e)) {
    case error_kind::deadlock:
      throw deadlock(victim_message(context, "the server chose this session as a deadlock victim", e), e.sqlstate(),
                     e.vendor_code());
    case error_kind::serialization:
      throw serialization_failure(
          victim_message(context, "the server could not serialise this transaction with a concurrent one", e),
          e.sqlstate(), e.vendor_code());
    default: return;
  }
}

void rethrow_classified(dialect_kind dialect, const backend_error& e, const failure_context& context) {
  if (classify(dialect, e) == error_kind::undefined_table) {
    std::string m(e.what());
    m.append(" (").append(context.table).append(" is missing: run `sqllock migrate`").append(context.needs);
    throw schema_error(m.append(")"));
  }
  throw_if_rolled_back(dialect, e, context);
  throw;
}

void throw_server_error(dialect_kind dialect, const std::string& message, const std::string& sqlstate,
                        long long vendor_code) {
  backend_error e(message, sqlstate, vendor_code);
  switch (classify(dialect, e)) {
    case error_kind::deadlock: throw deadlock(message, sqlstate, vendor_code);
    case error_kind::serialization: throw serialization_failure(message, sqlstate, vendor_code);
    default: throw e;
  }
}

void rethrow_outcome_unknown(const connection_error& e, std::string_view unknown) {
  if (dynamic_cast<const outcome_unknown*>(&e) != nullptr) throw;
  std::string m(e.what());
  throw outcome_unknown(m.append(" (").append(unknown).append(")"));
}

bool ended_by_timeout(dialect_kind dialect, const backend_error& e) {
  const error_kind kind = classify(dialect, e);
  return kind == error_kind::lock_not_available || kind == error_kind::query_canceled;
}

}  // namespace sqllock::detail
