// The SOCI driver: one SQLite, PostgreSQL or MySQL session behind sqllock's driver seam.
//
// Statements are rewritten to ":p1, :p2, …" (one name per occurrence), prepared once per SQL
// text and kept in a bounded cache; each call assigns the bound variables and executes again.
// The per-library work (reading rows, native errors, session setup) lives in a soci_backend.
#pragma once

#include <memory>
#include <string>

#include "driver/connection.hpp"
#include "driver/soci/soci_backend.hpp"
#include "driver/statement_cache.hpp"

namespace sqllock::detail {

class soci_connection final : public connection, public notification_source {
 public:
  // Takes an open backend. `display` (the URI without its password) names it in errors.
  soci_connection(std::unique_ptr<soci_backend> backend, std::string display);
  ~soci_connection() override;

  result exec(std::string_view sql, std::span<const value> params) override;
  result exec_direct(std::string_view sql) override;
  void prepare(std::string_view sql, std::size_t param_count) override;
  bool broken() const noexcept override { return broken_; }
  int socket() const noexcept override { return broken_ ? -1 : backend_->socket(); }
  void abandon() noexcept override;
  std::string_view driver_name() const noexcept override { return "soci"; }
  // PostgreSQL only: SOCI has no notification API, so the backend reads them from libpq.
  notification_source* notifications() noexcept override { return backend_->receives_notifications() ? this : nullptr; }
  void listen(const std::string& channel) override;
  std::vector<std::string> await(std::chrono::milliseconds timeout) override;

 private:
  using handle = std::unique_ptr<soci_statement>;

  // Prepares `native` with each parameter bound as `signature` says.
  handle prepare(const native_statement& native, std::string_view sql, std::string signature);
  template <class F>
  result guarded(F&& run);
  // Throws the sqllock exception for `f`, marking the connection broken when it is lost.
  [[noreturn]] void report(const soci_failure& f);

  std::unique_ptr<soci_backend> backend_;
  // Declared after backend_: statements must be released before their session.
  statement_cache<handle> statements_;
  std::string display_;
  bool broken_ = false;
};

}  // namespace sqllock::detail
