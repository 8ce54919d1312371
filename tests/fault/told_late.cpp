#include "fault/told_late.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include "fault/history.hpp"
#include "fault/schema.hpp"
#include "sqllock/error.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {
namespace {

class told_on_return_holder : public test::lock_holder {
 public:
  told_on_return_holder(const run_config& cfg, const database& db, std::string res,
                        std::unique_ptr<test::lock_holder> inner, section_plan plan)
      : db_(db), res_(std::move(res)), lease_(cfg.lease), inner_(std::move(inner)), plan_(std::move(plan)),
        rng_(std::random_device{}() ^ static_cast<std::uint64_t>(::getpid())) {}

  std::optional<test::release_result> hold(std::chrono::milliseconds timeout, const test::hold_hooks& hooks) override {
    test::hold_hooks h = hooks;
    h.on_lost = [](std::int64_t) {};  // the library's lost signal: ignored
    h.body = [&](test::lock_section& s) {
      hooks.body(s);
      linger(s.fence(), hooks);
    };
    return inner_->hold(timeout, h);
  }

 private:
  // Stays in the section L/2–2 L, or until a statement of its own says the grant is gone.
  void linger(std::int64_t fence, const test::hold_hooks& hooks) {
    using std::chrono::milliseconds;
    const auto until = std::chrono::steady_clock::now() + milliseconds(std::uniform_int_distribution<std::int64_t>(
                                                              lease_.count() / 2, 2 * lease_.count())(rng_));
    if (plan_) plan_(mono_ns() + std::chrono::nanoseconds(until - std::chrono::steady_clock::now()).count());
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(
          std::min<std::chrono::steady_clock::duration>(lease_ / 3, until - std::chrono::steady_clock::now()));
      try {
        const auto r = test::sql(db_, "SELECT fence FROM distributed_lock WHERE resource = $1", {res_});
        const bool mine = !r.rows.empty() && r.rows[0][0] && std::stoll(*r.rows[0][0]) == fence;
        if (!mine) {
          hooks.on_lost(fence);  // told, now
          return;
        }
      } catch (const error&) {
        // no answer: nothing learned
      }
    }
  }

  const database& db_;
  std::string res_;
  std::chrono::milliseconds lease_;
  std::unique_ptr<test::lock_holder> inner_;
  section_plan plan_;
  std::mt19937_64 rng_;
};

}  // namespace

std::vector<std::unique_ptr<test::lock_holder>> told_on_return_holders(
    const run_config& cfg, const database& db, std::vector<std::unique_ptr<test::lock_holder>> table_holders,
    const section_plan& plan) {
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (std::size_t i = 0; i < table_holders.size(); ++i)
    out.push_back(std::make_unique<told_on_return_holder>(cfg, db, resource_name(static_cast<int>(i)),
                                                          std::move(table_holders[i]), plan));
  return out;
}

}  // namespace sqllock::fault
