#include "core/kinds/latch_store.hpp"

#include <thread>

#include "core/wait/backoff.hpp"
#include "core/handle/error_translation.hpp"
#include "core/handle/field_value.hpp"
#include "core/handle/transaction.hpp"
#include "dialect/dialect.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// A deadlock victim (InnoDB; on Galera also a certification conflict) was rolled back whole, so
// running it again is safe. Count-downs and arming touch one latch row each, so deadlocks are
// rare; a few retries with a short random pause let the other side through.
constexpr int kDeadlockAttempts = 4;

constexpr failure_context kLatchFailure{
    .subject = "a latch statement failed",
    .rolled_back = "the statement (it changed nothing)",
    .retry = "the call",
    .table = "the latch table (<table>_latches, schema 4)",
};

// Runs `unit` until it returns, retrying a deadlock victim; translates what it throws.
template <class Unit>
auto retrying_deadlocks(dialect_kind kind, Unit&& unit) {
  std::optional<backoff> pause;  // made on the first retry: seeding it costs a system call
  for (int attempt = 1;; ++attempt) {
    try {
      return unit();
    } catch (const backend_error& e) {
      if (classify(kind, e) != error_kind::deadlock || attempt == kDeadlockAttempts)
        rethrow_classified(kind, e, kLatchFailure);
    }
    if (!pause) pause.emplace(std::chrono::milliseconds(2), std::chrono::milliseconds(16));
    std::this_thread::sleep_for(pause->next());
  }
}

bool flag(const field& f, const char* what) { return field_int64(f, what) != 0; }

}  // namespace

result latch_store::write(const std::string& sql, std::span<const value> params) {
  return retrying_deadlocks(sql_.kind, [&] {
    try {
      return conn_.exec(sql, params);
    } catch (const connection_error& e) {
      rethrow_outcome_unknown(e,
                              "the connection broke while a latch statement ran; whether it took effect is unknown: "
                              "read the latch's state, or count down with a participant id, which counts once");
    }
  });
}

result latch_store::read(const std::string& sql, std::span<const value> params) {
  try {
    return conn_.exec(sql, params);
  } catch (const backend_error& e) {
    rethrow_classified(sql_.kind, e, kLatchFailure);
  }
}

std::optional<std::int64_t> latch_store::arm(const std::string& resource, std::int64_t count,
                                             std::optional<std::chrono::milliseconds> ttl) {
  const value params[] = {resource, count, ttl ? value(std::int64_t{ttl->count()}) : value()};
  const auto res = write(sql_.arm, params);
  if (!sql_.reads_back) {
    if (res.rows.empty()) return std::nullopt;
    return field_int64(res.rows[0].at(0), "generation");
  }
  if (res.affected == 0) return std::nullopt;
  const auto back = write(sql_.read_back, {});
  return field_int64(back.rows.at(0).at(0), "generation");
}

count_down_outcome latch_store::count_down(const std::string& resource) {
  const value params[] = {resource, channel_};
  const auto res = write(sql_.count_down, std::span(params, channel_.empty() ? 1 : 2));
  count_down_outcome out;
  if (!sql_.reads_back) {
    if (res.rows.empty()) return out;
    out.remaining = field_int64(res.rows[0].at(0), "count");
  } else {
    if (res.affected == 0) return out;
    out.remaining = field_int64(write(sql_.read_back, {}).rows.at(0).at(0), "count");
  }
  out.found = out.counted = out.armed = true;
  return out;
}

count_down_outcome latch_store::count_down(const std::string& resource, const std::string& participant) {
  if (sql_.participant_in_transaction) return count_down_in_transaction(resource, participant);
  const value params[] = {resource, participant, channel_};
  const auto res = write(sql_.count_down_participant, params);
  count_down_outcome out;
  if (res.rows.empty()) return out;
  const auto& r = res.rows[0];
  out.found = true;
  out.generation = field_int64(r.at(0), "generation");
  out.remaining = field_int64(r.at(1), "count");
  out.counted = flag(r.at(2), "counted");
  out.armed = flag(r.at(3), "armed");
  return out;
}

count_down_outcome latch_store::count_down_in_transaction(const std::string& resource, const std::string& participant) {
  return retrying_deadlocks(sql_.kind, [&] {
    // Nothing is committed before COMMIT: a connection that breaks earlier leaves nothing behind
    // (the server rolls the transaction back), so that is a plain connection_error.
    if (!sql_.participant_isolation.empty()) conn_.exec_direct(sql_.participant_isolation);
    transaction tx(conn_, sql_);
    count_down_outcome out;
    const value key[] = {resource};
    const auto locked = conn_.exec(sql_.lock_latch, key);
    if (locked.rows.empty()) {
      tx.rollback();
      return out;
    }
    const auto& r = locked.rows[0];
    out.found = true;
    out.remaining = field_int64(r.at(0), "count");
    out.generation = field_int64(r.at(1), "generation");
    out.armed = flag(r.at(2), "armed");
    if (!out.armed) {
      tx.rollback();
      return out;
    }
    const value arrival[] = {resource, out.generation, participant};
    if (conn_.exec(sql_.insert_arrival, arrival).affected == 0) {  // counted before
      tx.rollback();
      return out;
    }
    const value latch_key[] = {resource, out.generation};
    conn_.exec(sql_.decrement, latch_key);
    tx.commit(
        "the connection broke during the COMMIT of a latch count-down; whether it counted is unknown: count "
        "down again with the same participant id, which counts it at most once");
    out.counted = true;
    --out.remaining;
    return out;
  });
}

bool latch_store::arrived(const std::string& resource, std::int64_t generation, const std::string& participant) {
  const value params[] = {resource, generation, participant};
  return !read(sql_.arrived, params).rows.empty();
}

std::optional<latch_row> latch_store::find(const std::string& resource) {
  const value params[] = {resource};
  const auto res = read(sql_.find, params);
  if (res.rows.empty()) return std::nullopt;
  const auto& r = res.rows[0];
  latch_row out;
  out.count = field_int64(r.at(0), "count");
  out.initial = field_int64(r.at(1), "initial count");
  out.generation = field_int64(r.at(2), "generation");
  out.instance = r.at(3).value_or("");
  out.armed_at = r.at(4).value_or("");
  out.opened_at = r.at(5);
  if (r.at(6)) out.expires_in = std::chrono::milliseconds(field_int64(r.at(6), "expires_in"));
  out.expired = flag(r.at(7), "expired");
  return out;
}

std::vector<std::string> latch_store::arrivals(const std::string& resource, std::int64_t generation) {
  const value params[] = {resource, generation};
  std::vector<std::string> out;
  for (const auto& r : read(sql_.arrivals, params).rows) out.push_back(r.at(0).value_or(""));
  return out;
}

latch_reap_batch latch_store::reap_batch(std::size_t batch, std::chrono::milliseconds retention,
                                         std::chrono::milliseconds grace) {
  const value params[] = {static_cast<std::int64_t>(batch), std::int64_t{retention.count()},
                          std::int64_t{grace.count()}};
  latch_reap_batch out;
  if (!sql_.reap_in_transaction) {
    const auto rows = read(sql_.reap_batch, params).rows;
    out.candidates = rows.size();
    for (const auto& r : rows)
      if (r.at(0) == std::optional<std::string>("1")) ++out.deleted;
    return out;
  }
  try {
    if (!sql_.reap_isolation.empty()) conn_.exec_direct(sql_.reap_isolation);
    transaction tx(conn_, sql_);
    const auto picked = conn_.exec(sql_.reap_select, params).rows;
    out.candidates = picked.size();
    // Locked by this transaction (or under SQLite's one writer): they are deleted as they are.
    std::vector<value> keys(sql_.reap_delete_keys);
    for (std::size_t i = 0; i < picked.size(); i += sql_.reap_delete_keys) {
      for (std::size_t k = 0; k < keys.size(); ++k) {
        const std::size_t j = i + k;
        keys[k] = j < picked.size() && picked[j].at(0) ? value(*picked[j].at(0)) : value();
      }
      out.deleted += conn_.exec(sql_.reap_delete, keys).affected;
      conn_.exec(sql_.reap_delete_arrivals, keys);
    }
    tx.commit("the connection broke during the COMMIT of a latch reaper batch; run the reaper again");
  } catch (const backend_error& e) {
    rethrow_classified(sql_.kind, e, kLatchFailure);
  }
  return out;
}

std::uint64_t latch_store::sweep_arrivals(std::size_t batch) {
  const value params[] = {static_cast<std::int64_t>(batch)};
  try {
    if (!sql_.sweep_isolation.empty()) conn_.exec_direct(sql_.sweep_isolation);
    const auto res = conn_.exec(sql_.sweep_arrivals, params);
    return res.rows.empty() ? res.affected : res.rows.size();
  } catch (const backend_error& e) {
    rethrow_classified(sql_.kind, e, kLatchFailure);
  }
}

}  // namespace sqllock::detail
