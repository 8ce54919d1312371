#include "core/lease/multi_store.hpp"

#include <algorithm>

#include "core/handle/error_translation.hpp"
#include "core/handle/field_value.hpp"
#include "core/lease/holder_values.hpp"
#include "core/handle/transaction.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

constexpr failure_context kAttempt{.subject = "a multi_lock statement failed",
                                   .rolled_back = "the attempt (nothing of it was kept)",
                                   .retry = "the call"};

// $1 owner token and $2 … the names.
std::vector<value> owner_and_names(const std::string& owner, const std::vector<std::string>& names) {
  std::vector<value> params;
  params.reserve(names.size() + 1);
  params.emplace_back(owner);
  for (const auto& n : names) params.emplace_back(n);
  return params;
}

}  // namespace

std::optional<std::vector<acquired>> multi_store::complete(const std::vector<row>& rows,
                                                           const std::vector<std::string>& names) const {
  if (rows.size() != names.size()) return std::nullopt;
  std::vector<std::optional<acquired>> found(names.size());
  for (const auto& r : rows) {
    const auto& resource = r.at(0);
    // names is sorted by bytes: the row's place by binary search.
    const auto it = resource ? std::lower_bound(names.begin(), names.end(), *resource) : names.end();
    if (it == names.end() || *it != *resource || found[static_cast<std::size_t>(it - names.begin())])
      throw backend_error("lock table returned an unexpected multi_lock row for '" + resource.value_or("NULL") + "'",
                          "", 0);
    found[static_cast<std::size_t>(it - names.begin())] = acquired{field_int64(r.at(1), "count"),
                                                                   field_int64(r.at(2), "fence")};
  }
  std::vector<acquired> out;
  out.reserve(names.size());
  for (const auto& f : found) out.push_back(*f);
  return out;
}

std::optional<std::vector<acquired>> multi_store::acquire(const multi_request& r) {
  auto params = with_holder({}, r.owner, r.session, r.lease, r.auto_renew);
  params.insert(params.end(), r.names.begin(), r.names.end());

  if (!sql_.in_transaction) {
    // One statement in autocommit that grants every name or none (SQLite).
    result res;
    try {
      res = conn_->exec(sql_.acquire, params);
    } catch (const connection_error& e) {
      rethrow_outcome_unknown(e,
                              "the connection broke while a multi_lock statement ran; whether it took effect is "
                              "unknown: leases it created expire on its own");
    } catch (const backend_error& e) {
      if (is_transaction_rollback(dialect_.kind, e)) return std::nullopt;
      rethrow_classified(dialect_.kind, e, kAttempt);
    }
    if (auto all = complete(res.rows, r.names)) return all;
    // Nothing, or — which the statement's guard rules out — part of the set: give that part back
    // at once, so that no subset stays granted.
    table_store store(*conn_, dialect_);
    for (auto it = res.rows.rbegin(); it != res.rows.rend(); ++it)
      store.release(it->at(0).value_or(""), r.owner, field_int64(it->at(2), "fence"), field_int64(it->at(1), "count"));
    return std::nullopt;
  }

  // BEGIN, the upsert (and MySQL's read-back), then COMMIT only when every name was granted.
  // Until COMMIT nothing is visible to others and a broken connection ends the transaction on the
  // server, so a connection error there means "not taken".
  transaction tx(*conn_, dialect_);
  const auto not_taken = [&]() -> std::optional<std::vector<acquired>> {
    if (!tx.end_quietly() && !conn_->broken()) conn_.close();  // maybe still in the transaction: never pool it
    return std::nullopt;
  };
  try {
    auto res = conn_->exec(sql_.acquire, params);
    if (sql_.reads_back) {
      if (res.affected == 0) return not_taken();  // every name held elsewhere: nothing changed
      const auto key = owner_and_names(r.owner, r.names);
      res = conn_->exec(sql_.readback, key);
    }
    auto all = complete(res.rows, r.names);
    if (!all) return not_taken();
    tx.commit(
        "the connection broke during the COMMIT of a multi_lock attempt; whether the names were taken is unknown: "
        "leases it created expire on their own");
    return all;
  } catch (const outcome_unknown&) {
    throw;
  } catch (const connection_error&) {
    throw;  // the server rolls back the transaction of a closed session
  } catch (const backend_error& e) {
    // A deadlock victim (PostgreSQL 40P01, InnoDB 1213, a Galera certification conflict) or a
    // serialization failure rolled the whole attempt back: contention, like a refusal.
    const bool rolled_back = is_transaction_rollback(dialect_.kind, e);
    not_taken();
    if (rolled_back) return std::nullopt;
    rethrow_classified(dialect_.kind, e, kAttempt);
  }
}

std::optional<std::chrono::milliseconds> multi_store::lease_remaining(const std::string& owner,
                                                                      const std::vector<std::string>& names) {
  const auto params = owner_and_names(owner, names);
  result res;
  try {
    res = conn_->exec(sql_.lease_remaining, params);
  } catch (const backend_error& e) {
    rethrow_classified(dialect_.kind, e, kAttempt);
  }
  if (res.rows.empty() || !res.rows[0].at(0)) return std::nullopt;
  return std::chrono::milliseconds(field_int64(res.rows[0][0], "remaining lease"));
}

}  // namespace sqllock::detail
