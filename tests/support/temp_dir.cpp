#include "support/temp_dir.hpp"

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

namespace sqllock::test {
namespace {

// The directories made so far, each with the process that made it.
class made_dirs {
 public:
  void add(std::filesystem::path dir) {
    std::lock_guard lock(mutex_);
    dirs_.emplace_back(::getpid(), std::move(dir));
  }
  ~made_dirs() {
    std::error_code ignored;
    for (const auto& [maker, dir] : dirs_)
      if (maker == ::getpid()) std::filesystem::remove_all(dir, ignored);
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<pid_t, std::filesystem::path>> dirs_;
};

made_dirs& registry() {
  static made_dirs dirs;
  return dirs;
}

}  // namespace

std::filesystem::path make_temp_dir(const std::string& prefix) {
  auto& dirs = registry();  // constructed before the first directory, so destroyed after its users
  std::string templ = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(templ.data())) std::abort();
  dirs.add(templ);
  return templ;
}

}  // namespace sqllock::test
