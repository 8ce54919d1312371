// A private PostgreSQL or MariaDB server for one fault run, started and stopped through
// scripts/test-servers.sh in a directory of its own: the nemesis restarts and kills it, so it
// must never be the servers other tests share.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "sqllock/database.hpp"

namespace sqllock::fault {

class private_server {
 public:
  // Starts the server of `dialect` (postgresql or mysql) in `dir` with `script`; the other one is
  // not started. Throws std::runtime_error when it fails to start (the script's output is in
  // dir/../servers.log).
  private_server(const std::string& script, const std::filesystem::path& dir, dialect_kind dialect);
  // Stops the server and removes its directory.
  ~private_server();
  private_server(const private_server&) = delete;
  private_server& operator=(const private_server&) = delete;

  // The URI of the test database (an administrator account: it may kill sessions).
  const std::string& uri() const { return uri_; }
  // The port the server listens on (to tell its clients' sockets apart).
  int port() const { return port_; }

  // Restarts the server on the same port and data: fast = clean shutdown, otherwise SIGKILL of
  // every server process (a crash; PostgreSQL's "-m immediate" and MariaDB's kill -9 alike).
  // Returns false when the script failed.
  bool restart(bool fast);

 private:
  std::string script_;
  std::filesystem::path dir_;
  std::string log_;
  std::string suffix_;  // "pg" or "my"
  std::string uri_;
  int port_ = 0;
};

// KEY=VALUE lines of a file (the script's env file).
std::map<std::string, std::string> read_env_file(const std::filesystem::path& path);

}  // namespace sqllock::fault
