#include "cli.hpp"

#include <cstdlib>
#include <iostream>

#include "sqllock/error.hpp"

namespace sqllock::cli {

namespace {
// "--name" or "-n". Built by append, not `"-" + std::string(name)`: GCC 12
// at -O3 reports a false -Wrestrict inside libstdc++'s operator+(const char*, string&&).
std::string option_form(std::string_view dashes, std::string_view name) {
  std::string form;
  form.reserve(dashes.size() + name.size());
  form.append(dashes).append(name);
  return form;
}
}  // namespace

std::optional<std::string> args::take(std::string_view name, std::string_view short_name) {
  const std::string long_form = option_form("--", name);
  const std::string short_form = short_name.empty() ? std::string() : option_form("-", short_name);
  for (std::size_t i = 0; i < argv_.size(); ++i) {
    const std::string& a = argv_[i];
    if (a == "--") break;
    if (a == long_form || (!short_form.empty() && a == short_form)) {
      if (i + 1 >= argv_.size() || argv_[i + 1] == "--") throw usage_error{a + " needs a value"};
      std::string v = argv_[i + 1];
      // `--db --once` forgot the value; taking "--once" for it would hide the mistake behind a
      // confusing error about the value. A value that does start with "--" can use the = form.
      if (v.size() > 2 && v.rfind("--", 0) == 0)
        throw usage_error{a + " needs a value, not the option " + v + " (write " + long_form + "=" + v +
                          " for a value that starts with --)"};
      argv_.erase(argv_.begin() + static_cast<long>(i), argv_.begin() + static_cast<long>(i) + 2);
      return v;
    }
    if (a.rfind(long_form + "=", 0) == 0) {
      std::string v = a.substr(long_form.size() + 1);
      argv_.erase(argv_.begin() + static_cast<long>(i));
      return v;
    }
  }
  return std::nullopt;
}

bool args::flag(std::string_view name, std::string_view short_name) {
  const std::string long_form = option_form("--", name);
  const std::string short_form = short_name.empty() ? std::string() : option_form("-", short_name);
  for (std::size_t i = 0; i < argv_.size(); ++i) {
    if (argv_[i] == "--") break;
    if (argv_[i] == long_form || (!short_form.empty() && argv_[i] == short_form)) {
      argv_.erase(argv_.begin() + static_cast<long>(i));
      return true;
    }
  }
  return false;
}

std::vector<std::string> args::rest() {
  for (std::size_t i = 0; i < argv_.size(); ++i) {
    if (argv_[i] == "--") {
      std::vector<std::string> out(argv_.begin() + static_cast<long>(i) + 1, argv_.end());
      argv_.erase(argv_.begin() + static_cast<long>(i), argv_.end());
      return out;
    }
  }
  return {};
}

std::vector<std::string> args::positionals() {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (; i < argv_.size() && argv_[i] != "--"; ++i) {
    if (argv_[i].size() > 1 && argv_[i][0] == '-') throw usage_error{"unknown option '" + argv_[i] + "'"};
    out.push_back(argv_[i]);
  }
  if (i < argv_.size()) out.insert(out.end(), argv_.begin() + static_cast<long>(i) + 1, argv_.end());
  argv_.clear();
  return out;
}

void args::expect_done() const {
  if (!argv_.empty()) throw usage_error{"unexpected argument '" + argv_.front() + "'"};
}

std::string database_uri(args& a) {
  if (auto v = a.take("db")) return *v;
  if (const char* env = std::getenv("SQLLOCK_DB"); env && *env) return env;
  throw usage_error{"no database given: pass --db URI or set SQLLOCK_DB"};
}

int run_reporting_errors(const std::function<int()>& body) {
  try {
    return body();
  } catch (const usage_error& e) {
    std::cerr << "sqllock: " << e.message << " (see --help)\n";
    return exit_usage;
  } catch (const invalid_argument& e) {
    std::cerr << "sqllock: " << e.what() << "\n";
    return exit_usage;
  } catch (const not_supported& e) {
    std::cerr << "sqllock: " << e.what() << "\n";
    return exit_usage;
  } catch (const connection_error& e) {
    std::cerr << "sqllock: database unreachable: " << e.what() << "\n";
    return exit_unreachable;
  } catch (const schema_error& e) {
    std::cerr << "sqllock: " << e.what() << "\n";
    return exit_schema;
  } catch (const lock_lost& e) {
    std::cerr << "sqllock: lock lost: " << e.what() << "\n";
    return exit_lock_lost;
  } catch (const error& e) {
    std::cerr << "sqllock: database error: " << e.what() << "\n";
    return exit_database;
  } catch (const std::exception& e) {
    std::cerr << "sqllock: internal error: " << e.what() << "\n";
    return exit_internal;
  }
}

}  // namespace sqllock::cli
