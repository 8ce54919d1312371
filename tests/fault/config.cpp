#include "fault/config.hpp"

#include <stdexcept>

namespace sqllock::fault {

std::string to_string(lock_kind k) {
  switch (k) {
    case lock_kind::table: return "table";
    case lock_kind::advisory: return "advisory";
    case lock_kind::named: return "named";
    case lock_kind::row: return "row";
    case lock_kind::semaphore: return "semaphore";
    case lock_kind::latch: return "latch";
    case lock_kind::multi: return "multi";
    case lock_kind::fair: return "fair";
    case lock_kind::rw: return "rw";
  }
  return "?";
}

std::string to_string(control c) {
  switch (c) {
    case control::none: return "none";
    case control::unsafe_release: return "unsafe-release";
    case control::client_clock: return "client-clock";
    case control::count_then_insert: return "count-then-insert";
    case control::rogue_count_down: return "rogue-count-down";
    case control::sequential_multi: return "sequential-multi";
    case control::unordered_queue: return "unordered-queue";
    case control::reader_ignores_writer: return "reader-ignores-writer";
    case control::leaked_place: return "leaked-place";
    case control::told_on_return: return "told-on-return";
    case control::unguarded_write: return "unguarded-write";
  }
  return "?";
}

std::string to_string(setup_kind s) {
  switch (s) {
    case setup_kind::standalone: return "standalone";
    case setup_kind::pgaf: return "pgaf";
    case setup_kind::galera: return "galera";
  }
  return "?";
}

lock_kind parse_lock_kind(const std::string& s) {
  for (auto k : {lock_kind::table, lock_kind::advisory, lock_kind::named, lock_kind::row, lock_kind::semaphore,
                 lock_kind::latch, lock_kind::multi, lock_kind::fair, lock_kind::rw})
    if (to_string(k) == s) return k;
  throw std::invalid_argument("unknown lock kind '" + s +
                              "' (table, advisory, named, row, semaphore, latch, multi, fair, rw)");
}

control parse_control(const std::string& s) {
  for (auto c :
       {control::none, control::unsafe_release, control::client_clock, control::count_then_insert,
        control::rogue_count_down, control::sequential_multi, control::unordered_queue, control::reader_ignores_writer,
        control::leaked_place, control::told_on_return, control::unguarded_write})
    if (to_string(c) == s) return c;
  throw std::invalid_argument(
      "unknown control '" + s +
      "' (none, unsafe-release, client-clock, count-then-insert, rogue-count-down, sequential-multi,"
      " unordered-queue, reader-ignores-writer, leaked-place, told-on-return, unguarded-write)");
}

setup_kind parse_setup(const std::string& s) {
  for (auto k : {setup_kind::standalone, setup_kind::pgaf, setup_kind::galera})
    if (to_string(k) == s) return k;
  throw std::invalid_argument("unknown setup '" + s + "' (standalone, pgaf, galera)");
}

bool injects_network_faults(const run_config& c) {
  if (c.dialect == dialect_kind::sqlite || c.setup != setup_kind::standalone || c.expect_refusal) return false;
  if (c.faults.empty()) return true;
  for (const auto& f : c.faults)
    if (network_fault(f)) return true;
  return false;
}

dialect_kind parse_dialect(const std::string& s) {
  if (s == "postgresql") return dialect_kind::postgresql;
  if (s == "mysql" || s == "mariadb") return dialect_kind::mysql;
  if (s == "sqlite") return dialect_kind::sqlite;
  throw std::invalid_argument("unknown database '" + s + "' (postgresql, mariadb, sqlite)");
}

}  // namespace sqllock::fault
