// An application's libpqxx transaction behind sqllock's driver seam (the adapters in
// include/sqllock/adapters/pqxx.hpp).
//
// Statements run through the application's pqxx::transaction_base, inside its transaction, as
// one-off parameterised statements (exec_params): nothing is prepared, because prepared-statement
// names live on the application's connection and could clash with its own. The object borrows the
// transaction for one sqllock call; it never commits, aborts or closes anything.
// Only the pqxx driver's files include this header.
#pragma once

#include <string>

#include <pqxx/transaction_base>

#include "driver/connection.hpp"

namespace sqllock::detail {

class pqxx_tx_connection final : public connection {
 public:
  explicit pqxx_tx_connection(pqxx::transaction_base& tx) : tx_(tx) {}

  result exec(std::string_view sql, std::span<const value> params) override;
  result exec_direct(std::string_view sql) override;
  bool broken() const noexcept override { return broken_; }
  // Nothing to hand back: the transaction and its connection belong to the application.
  void abandon() noexcept override { broken_ = true; }
  std::string_view driver_name() const noexcept override { return "pqxx"; }

 private:
  template <class F>
  result guarded(F&& run);

  pqxx::transaction_base& tx_;
  std::string display_ = "the application's libpqxx connection";
  bool broken_ = false;
};

}  // namespace sqllock::detail
