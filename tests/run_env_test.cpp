// command_environment (tools/sqllock/run_env.hpp): the environment `sqllock run` gives its command.
#include "run_env.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sqllock::cli {
namespace {

using namespace std::chrono_literals;

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

// The entries of `env` that set `name`.
std::vector<std::string> entries_of(const std::vector<std::string>& env, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& e : env)
    if (e.rfind(name + "=", 0) == 0) out.push_back(e);
  return out;
}

TEST(RunEnvTest, ATableLockGetsItsFenceNameKindAndLeaseAndKeepsTheRest) {
  const char* inherited[] = {"PATH=/bin", "SQLLOCK_DB=sqlite:///x.db", "SQLLOCK_FENCE=3", nullptr};
  run_env_values v;
  v.kind = "table";
  v.names = {"report"};
  v.fences = {42};
  v.lease = 30s;
  const auto env = command_environment(inherited, v);
  EXPECT_TRUE(has(env, "PATH=/bin"));
  EXPECT_TRUE(has(env, "SQLLOCK_DB=sqlite:///x.db")) << "the user's variables pass through";
  EXPECT_EQ(entries_of(env, "SQLLOCK_FENCE"), std::vector<std::string>{"SQLLOCK_FENCE=42"}) << "the outer one is gone";
  EXPECT_TRUE(has(env, "SQLLOCK_NAME=report"));
  EXPECT_TRUE(has(env, "SQLLOCK_KIND=table"));
  EXPECT_TRUE(has(env, "SQLLOCK_LEASE_MS=30000"));
  EXPECT_TRUE(entries_of(env, "SQLLOCK_SLOT").empty());
  EXPECT_TRUE(entries_of(env, "SQLLOCK_NAME_COUNT").empty()) << "one name: no indexed variables";
}

TEST(RunEnvTest, KindsWithoutAFenceOrLeaseLeaveThoseVariablesOut) {
  const char* inherited[] = {"SQLLOCK_FENCE=3",
                             "SQLLOCK_LEASE_MS=10",
                             "SQLLOCK_FENCE_2=9",
                             "SQLLOCK_NAME_12=x",
                             "SQLLOCK_FENCE_X=kept",
                             "SQLLOCK_NAMES=kept",
                             nullptr};
  run_env_values v;
  v.kind = "advisory";
  v.names = {"job"};
  const auto env = command_environment(inherited, v);
  for (const char* gone : {"SQLLOCK_FENCE", "SQLLOCK_LEASE_MS", "SQLLOCK_FENCE_2", "SQLLOCK_NAME_12"})
    EXPECT_TRUE(entries_of(env, gone).empty()) << gone;
  EXPECT_TRUE(has(env, "SQLLOCK_FENCE_X=kept")) << "not one of sqllock run's names";
  EXPECT_TRUE(has(env, "SQLLOCK_NAMES=kept"));
  EXPECT_TRUE(has(env, "SQLLOCK_KIND=advisory"));
}

TEST(RunEnvTest, SeveralNamesAreNumberedInTheOrderGiven) {
  const char* inherited[] = {nullptr};
  run_env_values v;
  v.kind = "table";
  v.names = {"b", "a"};
  v.fences = {7, 5};
  v.lease = 1500ms;
  const auto env = command_environment(inherited, v);
  for (const char* e : {"SQLLOCK_NAME=b", "SQLLOCK_FENCE=7", "SQLLOCK_NAME_COUNT=2", "SQLLOCK_NAME_1=b",
                        "SQLLOCK_FENCE_1=7", "SQLLOCK_NAME_2=a", "SQLLOCK_FENCE_2=5", "SQLLOCK_LEASE_MS=1500"})
    EXPECT_TRUE(has(env, e)) << e;
}

TEST(RunEnvTest, ASemaphoreAndAReadWriteLockTellSlotAndMode) {
  const char* inherited[] = {nullptr};
  run_env_values v;
  v.kind = "semaphore";
  v.names = {"encoder"};
  v.fences = {9};
  v.slot = 2;
  EXPECT_TRUE(has(command_environment(inherited, v), "SQLLOCK_SLOT=2"));
  v.kind = "rw";
  v.slot.reset();
  v.mode = "shared";
  const auto env = command_environment(inherited, v);
  EXPECT_TRUE(has(env, "SQLLOCK_MODE=shared"));
  EXPECT_TRUE(entries_of(env, "SQLLOCK_SLOT").empty());
}

TEST(RunEnvTest, RunVariablesAreRecognisedByName) {
  for (const char* yes : {"SQLLOCK_FENCE=1", "SQLLOCK_NAME_3=x", "SQLLOCK_FENCE_10=1", "SQLLOCK_MODE=", "SQLLOCK_KIND"})
    EXPECT_TRUE(is_run_variable(yes)) << yes;
  for (const char* no :
       {"SQLLOCK_DB=x", "SQLLOCK_FENCE_=1", "SQLLOCK_NAME_1a=x", "SQLLOCK_FENCEX=1", "XSQLLOCK_FENCE=1"})
    EXPECT_FALSE(is_run_variable(no)) << no;
}

}  // namespace
}  // namespace sqllock::cli
