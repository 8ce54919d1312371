#include "fault/semaphore_holder.hpp"

#include <optional>
#include <stop_token>

#include "fault/schema.hpp"
#include "sqllock/error.hpp"
#include "sqllock/semaphore.hpp"

namespace sqllock::fault {
namespace {

class semaphore_holder final : public test::lock_holder {
 public:
  semaphore_holder(const run_config& cfg, const database& db, const std::string& name)
      : db_(db), sem_(db, name, cfg.permits, options(cfg)) {}

  std::optional<test::release_result> hold(std::chrono::milliseconds wait, const test::hold_hooks& hooks) override {
    std::optional<permit> p = sem_.try_acquire_for(wait);
    if (!p) return std::nullopt;
    std::optional<test::lost_callback> on_lost;  // through the release too: a loss may come while it runs
    {
      slot_section s(db_, p->fence(), p->slot(), [&p] { return p->claim(); });
      on_lost.emplace(p->lost_token(), [&hooks, fence = s.fence()] { hooks.on_lost(fence); });
      hooks.body(s);
      hooks.before_release();
    }
    // A failed release gives the permit up (its row runs out with its lease): no retry.
    try {
      p->release();
      return test::release_result::ok;
    } catch (const not_held&) {
      return test::release_result::not_held;
    } catch (const lock_lost&) {
      return test::release_result::lost;
    } catch (const outcome_unknown&) {
      return test::release_result::unknown;
    } catch (const error&) {
      return test::release_result::error;
    }
  }

 private:
  static semaphore_options options(const run_config& cfg) {
    semaphore_options o;
    o.ttl = cfg.lease;
    o.on_unlock_error = [](const std::exception&) {};
    return o;
  }

  const database& db_;
  semaphore sem_;
};

}  // namespace

std::vector<std::unique_ptr<test::lock_holder>> semaphore_holders(const run_config& cfg, const database& db) {
  std::vector<std::unique_ptr<test::lock_holder>> out;
  for (int i = 0; i < cfg.resources; ++i) out.push_back(std::make_unique<semaphore_holder>(cfg, db, resource_name(i)));
  return out;
}

}  // namespace sqllock::fault
