#include "core/admin/admin_store.hpp"

#include <algorithm>
#include <array>
#include <tuple>

#include "core/handle/error_translation.hpp"
#include "core/handle/field_value.hpp"
#include "core/lease/queue_store.hpp"
#include "core/handle/transaction.hpp"
#include "dialect/dialect.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// A row of kLockColumns (see admin_sql.hpp).
lock_info to_lock_info(const row& r) {
  if (r.size() < kLockColumns)
    throw backend_error("lock table status returned " + std::to_string(r.size()) + " columns", "", 0);
  lock_info l;
  l.resource = r[0].value_or("");
  l.owner = r[1].value_or("");
  l.holder_host = r[2].value_or("");
  l.holder_pid = field_int64(r[3], "holder_pid");
  l.holder_thread = r[4].value_or("");
  l.count = field_int64(r[5], "count");
  l.fence = field_int64(r[6], "fence");
  l.acquired_at = r[7].value_or("");
  l.expires_in = std::chrono::milliseconds(field_int64(r[8], "expires_in"));
  l.expired = field_int64(r[9], "expired") != 0;
  return l;
}

std::vector<lock_info> to_lock_infos(const result& res) {
  std::vector<lock_info> out;
  out.reserve(res.rows.size());
  for (const auto& r : res.rows) out.push_back(to_lock_info(r));
  return out;
}

std::vector<permit_info> to_permit_infos(const std::vector<row>& rows) {
  std::vector<permit_info> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    if (r.size() < kPermitColumns)
      throw backend_error("permits status returned " + std::to_string(r.size()) + " columns", "", 0);
    permit_info p;
    static_cast<lock_info&>(p) = to_lock_info(r);
    p.slot = field_int64(r[kLockColumns], "slot");
    p.permits = field_int64(r[kLockColumns + 1], "permits");
    out.push_back(std::move(p));
  }
  return out;
}

// The kind column of a queue row ('F' or 'R', core/lease/queue_store.hpp).
queue_lock_kind to_queue_lock_kind(const field& f) {
  if (f && f->size() == 1 && (*f)[0] == static_cast<char>(queue_kind::fair)) return queue_lock_kind::fair;
  if (f && f->size() == 1 && (*f)[0] == static_cast<char>(queue_kind::rw)) return queue_lock_kind::rw;
  throw backend_error("queue status returned an unknown kind '" + f.value_or("NULL") + "'", "", 0);
}

// Rows of kQueueColumns, in queue order: sorted by resource, kind and ticket (a DELETE …
// RETURNING has no order), each with its position among the entries of its resource and kind and
// the live entries ahead that block it — all of them for a writer, the writers for a reader — as
// the one statement that read them saw the queue.
std::vector<queue_entry_info> to_queue_infos(const std::vector<row>& rows) {
  std::vector<queue_entry_info> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    if (r.size() < kQueueColumns)
      throw backend_error("queue status returned " + std::to_string(r.size()) + " columns", "", 0);
    queue_entry_info q;
    static_cast<lock_info&>(q) = to_lock_info(r);
    q.kind = to_queue_lock_kind(r[kLockColumns]);
    q.write_levels = field_int64(r[kLockColumns + 1], "write_count");
    q.read_levels = field_int64(r[kLockColumns + 2], "read_count");
    out.push_back(std::move(q));
  }
  // std::string compares bytes as unsigned char, as the byte-wise collations of the table do.
  std::sort(out.begin(), out.end(), [](const queue_entry_info& a, const queue_entry_info& b) {
    return std::tie(a.resource, a.kind, a.fence) < std::tie(b.resource, b.kind, b.fence);
  });
  std::int64_t position = 0, live_ahead = 0, live_writers_ahead = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& q = out[i];
    if (i == 0 || q.resource != out[i - 1].resource || q.kind != out[i - 1].kind)
      position = live_ahead = live_writers_ahead = 0;
    q.position = ++position;
    q.blockers = q.writer() ? live_ahead : live_writers_ahead;
    q.holds = !q.expired && q.blockers == 0;
    if (!q.expired) {
      ++live_ahead;
      if (q.writer()) ++live_writers_ahead;
    }
  }
  return out;
}

// The scope values of the queue statements (admin_sql::scope_params): the tags of both kinds, or
// of `kind` twice.
std::array<value, 2> queue_scope(std::optional<queue_lock_kind> kind) {
  const auto tag = [](queue_kind k) { return std::string(1, static_cast<char>(k)); };
  if (!kind) return {tag(queue_kind::fair), tag(queue_kind::rw)};
  const auto k = *kind == queue_lock_kind::fair ? queue_kind::fair : queue_kind::rw;
  return {tag(k), tag(k)};
}

// What a connection broken during a forced release leaves unknown.
constexpr std::string_view kForcedReleaseUnknown =
    "the connection broke during a forced release; whether the row was deleted is unknown: check with "
    "`sqllock status --lock NAME`";

}  // namespace

result admin_store::run(const std::string& sql, std::span<const value> params) {
  try {
    return conn_.exec(sql, params);
  } catch (const backend_error& e) {
    rethrow_classified(sql_.kind, e, {.subject = "a lock table statement failed"});
  }
}

result admin_store::run_direct(const std::string& sql) {
  try {
    return conn_.exec_direct(sql);
  } catch (const backend_error& e) {
    rethrow_classified(sql_.kind, e, {.subject = "a lock table statement failed"});
  }
}

reap_batch_result admin_store::reap_batch(std::size_t batch, std::chrono::milliseconds grace, std::string& resume) {
  const auto limit = static_cast<std::int64_t>(batch);
  if (!sql_.reap_in_transaction) {
    const value params[] = {limit, std::int64_t{grace.count()}};
    const auto rows = run(sql_.reap_batch, params).rows;
    reap_batch_result out{rows.size(), 0};
    for (const auto& r : rows)
      if (r.at(0) == std::optional<std::string>("1")) ++out.deleted;
    return out;
  }
  if (!sql_.reap_isolation.empty()) run_direct(sql_.reap_isolation);
  transaction tx(conn_, sql_);
  const value select_params[] = {limit, std::int64_t{grace.count()}, resume.empty() ? sql_.reap_resume_start : resume};
  const auto picked = run(sql_.reap_select, select_params);
  reap_batch_result out{picked.rows.size(), 0};
  // Each picked row is its key's columns, then its expires_at text.
  const std::size_t width = sql_.reap_key_columns;
  std::vector<value> params(sql_.reap_delete_keys * width + 1);
  for (std::size_t i = 0; i < picked.rows.size(); i += sql_.reap_delete_keys) {
    params[0] = std::int64_t{grace.count()};
    for (std::size_t k = 0; k < sql_.reap_delete_keys; ++k) {
      const std::size_t j = i + k;
      for (std::size_t c = 0; c < width; ++c) {
        auto& param = params[1 + k * width + c];
        if (j < picked.rows.size() && picked.rows[j].at(c))
          param = *picked.rows[j][c];
        else
          param = std::monostate{};
      }
    }
    out.deleted += run(sql_.reap_delete, params).affected;
  }
  tx.commit(
      "the connection broke during the COMMIT of a reap batch; whether its rows were deleted is unknown: "
      "reap again");
  if (!picked.rows.empty() && picked.rows.back().at(width)) resume = *picked.rows.back()[width];
  return out;
}

std::vector<lock_info> admin_store::list_locks() { return to_lock_infos(run(sql_.list_locks, {})); }

std::vector<row> admin_store::find_rows(const std::string& resource, std::span<const value> scope) {
  std::vector<value> params{resource};
  params.insert(params.end(), scope.begin(), scope.end());
  return run(sql_.find_lock, params).rows;
}

std::optional<lock_info> admin_store::find_lock(const std::string& resource) {
  const auto rows = find_rows(resource, {});
  if (rows.empty()) return std::nullopt;
  return to_lock_info(rows.front());
}

std::vector<advisory_lock_info> admin_store::advisory_locks() {
  if (sql_.advisory_locks.empty()) throw not_supported("advisory locks exist on PostgreSQL only");
  const auto res = run(sql_.advisory_locks, {});
  std::vector<advisory_lock_info> out;
  out.reserve(res.rows.size());
  for (const auto& r : res.rows) {
    advisory_lock_info a;
    a.pid = r.at(0) ? field_int64(r[0], "pid") : 0;
    a.keys.push_back(field_int64(r.at(1), "advisory key"));
    if (r.at(2)) a.keys.push_back(field_int64(r[2], "advisory key"));
    a.mode = r.at(3).value_or("");
    a.granted = field_int64(r.at(4), "granted") != 0;
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<row> admin_store::force_release_rows(const std::string& resource, const std::string& wakeup_channel,
                                                 std::span<const value> scope) {
  std::vector<value> params{resource};
  if (!sql_.force_release_in_transaction) {
    if (!wakeup_channel.empty()) params.emplace_back(wakeup_channel);
    params.insert(params.end(), scope.begin(), scope.end());
    try {
      return run(sql_.force_release, params).rows;
    } catch (const connection_error& e) {
      rethrow_outcome_unknown(e, kForcedReleaseUnknown);
    }
  }
  params.insert(params.end(), scope.begin(), scope.end());
  transaction tx(conn_, sql_);
  auto held = run(sql_.force_release_select, params).rows;
  if (held.empty()) return held;  // nothing to delete; the destructor rolls back
  try {
    run(sql_.force_release, params);
    tx.commit(kForcedReleaseUnknown);
  } catch (const connection_error& e) {
    rethrow_outcome_unknown(e, kForcedReleaseUnknown);
  }
  return held;
}

std::optional<lock_info> admin_store::force_release(const std::string& resource, const std::string& wakeup_channel) {
  const auto rows = force_release_rows(resource, wakeup_channel);
  if (rows.empty()) return std::nullopt;
  return to_lock_info(rows.front());
}

std::vector<permit_info> admin_store::list_permits() { return to_permit_infos(run(sql_.list_locks, {}).rows); }

std::vector<permit_info> admin_store::find_permits(const std::string& resource) {
  return to_permit_infos(find_rows(resource, {}));
}

std::vector<permit_info> admin_store::force_release_permits(const std::string& resource,
                                                            const std::string& wakeup_channel) {
  return to_permit_infos(force_release_rows(resource, wakeup_channel));
}

std::vector<queue_entry_info> admin_store::list_queue() { return to_queue_infos(run(sql_.list_locks, {}).rows); }

std::vector<queue_entry_info> admin_store::find_queue(const std::string& resource,
                                                      std::optional<queue_lock_kind> kind) {
  return to_queue_infos(find_rows(resource, queue_scope(kind)));
}

std::vector<queue_entry_info> admin_store::force_release_queue(const std::string& resource,
                                                               const std::string& wakeup_channel,
                                                               std::optional<queue_lock_kind> kind) {
  return to_queue_infos(force_release_rows(resource, wakeup_channel, queue_scope(kind)));
}

}  // namespace sqllock::detail
