// Runs one multi_lock attempt — every name or none — and the wait's lease query, with the
// dialect's multi_lock statements (dialect/multi_lock_sql.hpp). The rows it writes are ordinary
// lock rows: table_store releases and renews them.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/handle/database_impl.hpp"
#include "core/lease/table_store.hpp"
#include "dialect/multi_lock_sql.hpp"

namespace sqllock::detail {

struct multi_request {
  const std::vector<std::string>& names;  // sorted by bytes, no duplicates
  std::string owner;
  std::string session;
  std::chrono::milliseconds lease;
  bool auto_renew;
};

class multi_store {
 public:
  multi_store(pooled_connection& conn, const dialect_sql& dialect, const multi_lock_sql& sql)
      : conn_(conn), dialect_(dialect), sql_(sql) {}

  // One attempt: (count, fence) of every name, in the order of r.names, or nullopt when none was
  // taken — another owner holds a live lease on one of them, or the server chose the attempt as a
  // deadlock (or serialization) victim, which is contention too. Never leaves a subset granted.
  // Throws connection_error when the connection broke before anything could commit (in a
  // transaction: before COMMIT), outcome_unknown when it broke while the grant may have committed
  // (in a transaction: during COMMIT), schema_error / backend_error otherwise. After a failed
  // ROLLBACK the connection is closed instead of pooled.
  std::optional<std::vector<acquired>> acquire(const multi_request& r);

  // Milliseconds left of the earliest live lease among the names' rows of owners other than
  // `owner`; nullopt when no name is held by another owner's live lease. A plain read, no locks.
  std::optional<std::chrono::milliseconds> lease_remaining(const std::string& owner,
                                                           const std::vector<std::string>& names);

 private:
  // The rows of a grant in the order of `names`; nullopt unless every name is there.
  std::optional<std::vector<acquired>> complete(const std::vector<row>& rows,
                                                const std::vector<std::string>& names) const;

  pooled_connection& conn_;
  const dialect_sql& dialect_;
  const multi_lock_sql& sql_;
};

}  // namespace sqllock::detail
