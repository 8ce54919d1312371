// Money transfers between accounts under row locks (PostgreSQL), in two styles:
//
//   money_transfer URI lock_row TRANSFERS [TABLE]       your own libpqxx transaction + sqllock::lock_row
//   money_transfer URI with_row_lock TRANSFERS [TABLE]  sqllock runs the transaction: with_row_lock
//
// Run `sqllock migrate --db URI` once first. The program creates TABLE (default "accounts": five
// accounts of 100) when it is missing — that needs a role that may create tables; afterwards
// SELECT and UPDATE suffice — then makes TRANSFERS random transfers and checks the invariant that
// every run in any number of processes keeps: the total is unchanged and no balance is negative.
// It exits 0 when the invariant holds, 3 when it does not, 1 on an error, 2 on a bad command line.
//
// Each transfer locks the names "TABLE:<id>" of both accounts, in id order — so two transfers in
// opposite directions wait for each other instead of deadlocking — then reads both balances and
// writes the new ones back. Read-then-write is only correct because no other transfer can touch
// those accounts until the commit. Both styles take the same locks, so processes of both styles
// may work on one table at once.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>

#include <pqxx/pqxx>
#include <sqllock/adapters/pqxx.hpp>
#include <sqllock/database.hpp>
#include <sqllock/row_lock.hpp>

namespace {

constexpr int kAccounts = 5;
constexpr std::int64_t kOpeningBalance = 100;

std::string lock_name(const std::string& table, int account) { return table + ":" + std::to_string(account); }

// Creates the accounts table unless it exists. Processes starting together take turns: a
// transaction-scoped advisory lock (sqllock::advisory_xact_lock) serialises the check and the
// creation, and ends with the commit.
void create_accounts_if_missing(pqxx::connection& conn, const std::string& table) {
  pqxx::work tx(conn);
  sqllock::advisory_xact_lock(tx, "money_transfer: create " + table);
  if (tx.exec_params1("SELECT to_regclass($1) IS NULL", tx.quote_name(table))[0].as<bool>()) {
    tx.exec0("CREATE TABLE " + tx.quote_name(table) + " (id integer PRIMARY KEY, balance bigint NOT NULL)");
    tx.exec_params0("INSERT INTO " + tx.quote_name(table) + " SELECT g, $1 FROM generate_series(1, $2) AS g",
                    kOpeningBalance, kAccounts);
  }
  tx.commit();
}

// One transfer in the application's own transaction: sqllock::lock_row joins it, and the locks end
// with its commit (or its rollback). Returns false when `from` has too little money.
bool transfer_lock_row(pqxx::connection& conn, const std::string& table, int from, int to, std::int64_t amount) {
  pqxx::work tx(conn);
  sqllock::lock_row(tx, lock_name(table, std::min(from, to)));
  sqllock::lock_row(tx, lock_name(table, std::max(from, to)));

  const std::string accounts = tx.quote_name(table);
  auto balance = [&](int id) {
    return tx.exec_params1("SELECT balance FROM " + accounts + " WHERE id = $1", id)[0].as<std::int64_t>();
  };
  const std::int64_t from_balance = balance(from);
  const std::int64_t to_balance = balance(to);
  if (from_balance < amount) return false;  // tx's destructor rolls back: the locks end
  tx.exec_params0("UPDATE " + accounts + " SET balance = $1 WHERE id = $2", from_balance - amount, from);
  tx.exec_params0("UPDATE " + accounts + " SET balance = $1 WHERE id = $2", to_balance + amount, to);
  tx.commit();  // the new balances and the end of both locks, at once
  return true;
}

// The same with sqllock::with_row_lock, which holds one name per transaction: the second account's
// lock is taken inside the first one's, and the transfer runs in the inner transaction. It commits
// before the outer one ends, so both locks cover it. `accounts` is the quoted table name.
bool transfer_with_row_lock(const sqllock::database& db, const std::string& table, const std::string& accounts,
                            int from, int to, std::int64_t amount) {
  return sqllock::with_row_lock(db, lock_name(table, std::min(from, to)), [&](sqllock::row_lock_tx&) {
    return sqllock::with_row_lock(db, lock_name(table, std::max(from, to)), [&](sqllock::row_lock_tx& tx) {
      auto balance = [&](int id) {
        const auto r = tx.exec("SELECT balance FROM " + accounts + " WHERE id = $1", {std::int64_t{id}});
        return std::int64_t{std::stoll(r.rows.at(0).at(0).value())};
      };
      const std::int64_t from_balance = balance(from);
      const std::int64_t to_balance = balance(to);
      if (from_balance < amount) return false;  // nothing written; the commit just ends the lock
      tx.exec("UPDATE " + accounts + " SET balance = $1 WHERE id = $2", {from_balance - amount, std::int64_t{from}});
      tx.exec("UPDATE " + accounts + " SET balance = $1 WHERE id = $2", {to_balance + amount, std::int64_t{to}});
      return true;  // with_row_lock commits
    });
  });
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 2 ? argv[2] : "";
  if (argc < 4 || argc > 5 || (mode != "lock_row" && mode != "with_row_lock")) {
    std::cerr << "usage: money_transfer URI (lock_row | with_row_lock) TRANSFERS [TABLE]\n";
    return 2;
  }
  const std::string uri = argv[1];
  const std::string table = argc > 4 ? argv[4] : "accounts";
  try {
    const int transfers = std::stoi(argv[3]);
    pqxx::connection conn(uri);  // libpq takes the same postgresql:// URI as sqllock
    sqllock::database db(uri);
    create_accounts_if_missing(conn, table);
    const std::string accounts = conn.quote_name(table);

    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> account(1, kAccounts);
    std::uniform_int_distribution<std::int64_t> amount(1, 60);
    int done = 0;
    int refused = 0;
    for (int i = 0; i < transfers; ++i) {
      const int from = account(random);
      int to = account(random);
      while (to == from) to = account(random);
      const bool ok = mode == "lock_row" ? transfer_lock_row(conn, table, from, to, amount(random))
                                         : transfer_with_row_lock(db, table, accounts, from, to, amount(random));
      ++(ok ? done : refused);
    }

    pqxx::work tx(conn);  // one statement sees one snapshot: a consistent total
    const auto r = tx.exec1("SELECT sum(balance), min(balance), count(*) FROM " + accounts);
    const auto total = r[0].as<std::int64_t>();
    const auto lowest = r[1].as<std::int64_t>();
    const auto expected = r[2].as<std::int64_t>() * kOpeningBalance;
    std::cout << "mode=" << mode << " done=" << done << " refused=" << refused << " total=" << total
              << " expected_total=" << expected << " min_balance=" << lowest << std::endl;
    if (total != expected || lowest < 0) {
      std::cerr << "money_transfer: invariant broken: total " << total << " (expected " << expected
                << "), lowest balance " << lowest << "\n";
      return 3;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "money_transfer: " << e.what() << "\n";
    return 1;
  }
}
