#include "fault/guarded_write.hpp"

#include <exception>

#include "fault/history.hpp"
#include "sqllock/error.hpp"
#include "support/app_sessions.hpp"

namespace sqllock::fault {
namespace {

// The adapter each database's application connection goes through (test::connect_app's names).
const char* adapter(dialect_kind d) {
  switch (d) {
    case dialect_kind::postgresql: return "pqxx_postgresql";
    case dialect_kind::mysql: return "mysqlcppconn_mariadb";
    case dialect_kind::sqlite: return "soci_sqlite";
  }
  return "";
}

}  // namespace

guarded_writer::guarded_writer(std::string uri, dialect_kind dialect, bool guard)
    : uri_(std::move(uri)), dialect_(dialect), guard_(guard) {}

guarded_writer::~guarded_writer() = default;

guarded_outcome guarded_writer::write(const lease_claim& claim,
                                      const std::vector<std::pair<std::string, std::int64_t>>& counters) {
  guarded_outcome out;
  bool open = false;
  try {
    if (!app_) app_ = test::connect_app(adapter(dialect_), uri_);
    const std::string statement = "UPDATE fault_data SET g = " + app_->placeholder(2) +
                                  " WHERE k = " + app_->placeholder(1);
    out.attempted = mono_ns();
    app_->begin();
    open = true;
    if (guard_) app_->guard(claim);
    for (const auto& [key, value] : counters) app_->update_where(statement, value, key);
    out.sent = mono_ns();
    open = false;
    app_->commit();
    out.result = "ok";
    return out;
  } catch (const lock_lost&) {
    out.result = "lost";
  } catch (const std::exception&) {
    // Whatever broke (a restart, a killed session, a deadlock or certification failure): a
    // commit that threw may have committed; anything before it rolled back with the session.
    out.result = out.sent ? "unk" : "rej";
    open = false;
    app_.reset();
  }
  if (open) {
    try {
      app_->rollback();
    } catch (const std::exception&) {
      app_.reset();
    }
  }
  return out;
}

}  // namespace sqllock::fault
