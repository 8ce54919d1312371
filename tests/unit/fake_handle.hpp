// A database handle on a fake clock and a scripted fake server (no server, no network), for the
// unit tests of the core's timing rules.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/uri.hpp"
#include "core/handle/database_impl.hpp"
#include "sqllock/database.hpp"
#include "support/fake_connection.hpp"
#include "unit/fake_clock.hpp"

namespace test {

struct fake_handle {
  explicit fake_handle(const std::string& uri = "postgresql://unit@fake/unit")
      : db(d::database_access::wrap(
            std::make_shared<d::database_impl>(d::parse_uri(uri), sqllock::database_options{},
                                               d::database_seams{clock, [s = server] { return s->connect(); }}))),
        impl(d::database_access::impl(db)) {}

  const d::dialect_sql& sql() const { return impl.sql(); }

  std::shared_ptr<fake_clock> clock = std::make_shared<fake_clock>();
  std::shared_ptr<fake_server> server = std::make_shared<fake_server>();
  sqllock::database db;
  d::database_impl& impl;
};

// Waits in real time (up to `limit`) until `done` is true; background threads act on the fake
// clock within milliseconds.
inline bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace test
