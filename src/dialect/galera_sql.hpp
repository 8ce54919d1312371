// SQL that tells whether a MySQL/MariaDB server is a node of a Galera cluster (MariaDB Galera
// Cluster, Percona XtraDB Cluster). There GET_LOCK and SELECT … FOR UPDATE only lock on the node
// that runs them, so the core refuses named locks and row locks on a cluster of more than one node
// (core/handle/galera_guard.hpp). Kept apart from dialect_sql: the statements read server state, not the
// lock table, and exist on one dialect only.
#pragma once

#include <string>

#include "sqllock/dialect_kind.hpp"

namespace sqllock::detail {

// Both statements run with exec_direct (no parameters, nothing prepared), need no privilege beyond
// connecting, read no table (so they take no InnoDB snapshot inside a caller's transaction) and
// answer rows (Variable_name, Value):
// - MariaDB with a wsrep provider (Galera): one row each, e.g. wsrep_cluster_size = 3, wsrep_on = ON.
// - MariaDB without one (the usual single server): wsrep_cluster_size = 0, wsrep_on = OFF.
// - MySQL 8 without Galera: no row for either (empty result, not an error).
struct galera_probe_sql {
  // False for PostgreSQL and SQLite, which have no Galera: nothing is asked.
  bool applies = false;
  std::string cluster_size;       // the number of nodes in the node's cluster component (a status)
  std::string cluster_size_name;  // the Variable_name of the row that answers it
  std::string wsrep_on;           // whether the node replicates through wsrep at all (a variable)
  std::string wsrep_on_name;
};

// The probe for `kind`; a static object.
const galera_probe_sql& galera_probe_statements(dialect_kind kind);

}  // namespace sqllock::detail
