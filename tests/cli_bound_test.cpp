// `sqllock run --wait` on a network that silently stops carrying packets: the waiting command
// still ends, with the documented exit status, instead of blocking until TCP gives up (about 15
// minutes). The CLI reaches the server through a TCP proxy (support/tcp_proxy) frozen mid-wait.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "sqllock/table_lock.hpp"
#include "support/lock_fixture.hpp"
#include "support/program.hpp"
#include "support/tcp_proxy.hpp"
#include "support/temp_dir.hpp"
#include "support/time_scale.hpp"

namespace sqllock::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

class CliBoundTest : public LockTableTest {};

TEST_P(CliBoundTest, RunWaitingThroughAFrozenNetworkExitsUnreachableWithinItsBounds) {
  tcp_proxy proxy(GetParam().uri);
  const database direct = open();
  const std::string name = unique_name("cli_frozen");
  table_lock holder(direct, name);
  holder.lock();
  const auto dir = make_temp_dir("sqllock-cli-bound");
  // The default statement bound (10 s): the wait's own deadline must cut the attempt off.
  const std::string uri = proxy.uri();
  const auto start = clock_type::now();
  program cli({SQLLOCK_CLI, "run", "--db", uri, "--table", table_, "--lock", name, "--wait", "3s", "--", "true"}, dir);
  ASSERT_TRUE(eventually([&] { return proxy.accepted() > 0; }, scaled(5s))) << "the CLI connects";
  std::this_thread::sleep_for(500ms);  // it polls the held lock
  proxy.freeze();
  const int code = cli.wait(60s);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
  std::printf("[ info ] %s: sqllock run --wait 3s exited %d after %lld ms\n", GetParam().name.c_str(), code,
              static_cast<long long>(took.count()));
  EXPECT_EQ(code, 3) << "exit 3, database unreachable: " << cli.err();
  EXPECT_NE(cli.err().find("was cut off"), std::string::npos) << "says the statement was cut off: " << cli.err();
  // The wait (3 s) and the 1 s grace of the attempt in flight, and the program's start.
  EXPECT_LE(took, scaled(3s + 1s + 1500ms));
  holder.unlock();
}

INSTANTIATE_TEST_SUITE_P(Servers, CliBoundTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
