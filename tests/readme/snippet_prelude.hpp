// What README.md's C++ snippets leave to the reader: the database handles they open elsewhere and
// the application's own functions they call (run_report, move_money, …), declared only — the
// snippets are compiled, never linked or run (tests/readme.cmake). Nothing of sqllock is declared
// here: each snippet gets <sqllock/sqllock.hpp> and the adapter it names, as README says.
#pragma once

#include <chrono>
#include <cstdint>
#include <stop_token>

namespace sqllock {
class database;
class row_lock_tx;
}  // namespace sqllock

using namespace std::chrono_literals;  // the snippets write 5s, 10s, 6h

extern sqllock::database db;        // the lock database (README's first snippet opens one)
extern sqllock::database mysql_db;  // one on MySQL/MariaDB
#ifdef PQXX_H_CONNECTION            // a snippet that includes libpqxx, as one that joins its transaction must
extern pqxx::connection conn;       // the application's own libpq connection
#endif
extern int job;  // the print job of the fair-lock snippet

void run_report();
void run_report(std::int64_t fence, std::stop_token lost);
void move_money(std::int64_t from_fence, std::int64_t to_fence);
template <class Rows>
long next(const Rows& balance);
void encode(std::int64_t slot, std::int64_t fence);
void print(int job, std::int64_t ticket);
void serve();
void rebuild(std::int64_t fence);
void report();
void fn(sqllock::row_lock_tx& tx);
