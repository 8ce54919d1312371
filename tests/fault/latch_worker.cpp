#include "fault/latch_worker.hpp"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "fault/schema.hpp"
#include "sqllock/error.hpp"
#include "sqllock/latch.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {
namespace {

using test::sql;

// The rogue count-down's two statements (sqllock's default table names).
constexpr const char* kRogueArrive =
    "INSERT INTO distributed_lock_latch_arrivals (resource, generation, participant, arrived_at)"
    " SELECT resource, generation, $2, clock_timestamp() FROM distributed_lock_latches"
    " WHERE resource = $1 AND count > 0 ON CONFLICT DO NOTHING";
constexpr const char* kRogueDecrement =
    "UPDATE distributed_lock_latches SET count = count - 1,"
    " opened_at = CASE WHEN count = 1 THEN clock_timestamp() END WHERE resource = $1 AND count > 0";

const char* error_class(const std::exception& e) {
  if (dynamic_cast<const outcome_unknown*>(&e)) return "outcome_unknown";
  if (dynamic_cast<const connection_error*>(&e)) return "connection_error";
  if (dynamic_cast<const latch_not_armed*>(&e)) return "latch_not_armed";
  if (dynamic_cast<const backend_error*>(&e)) return "backend_error";
  if (dynamic_cast<const error*>(&e)) return "error";
  return "std_exception";
}

class latch_thread {
 public:
  latch_thread(const worker_args& a, const database& db, history_writer& h, std::atomic<int>& held, int index)
      : a_(a), db_(db), h_(h), held_(held), index_(index),
        rng_(std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 16) ^
             static_cast<std::uint64_t>(index)) {
    for (int i = 0; i < a.cfg.resources; ++i) latches_.emplace_back(db, resource_name(i));
  }

  void run() {
    const bool rogue = a_.cfg.ctl == control::rogue_count_down && index_ == 0;
    while (mono_ns() < a_.until_ns) {
      latch& l = latches_[std::uniform_int_distribution<std::size_t>(0, latches_.size() - 1)(rng_)];
      try {
        const auto st = l.state();
        if (st)
          h_.write('S', index_, mono_ns(), l.name(), st->generation,
                   {st->open ? "1" : "0", std::to_string(st->initial), std::to_string(st->count),
                    std::to_string(st->arrived.size())});
        if (!st || st->open) {
          if (const auto g = l.try_create(a_.cfg.latch_count)) h_.write('C', index_, mono_ns(), l.name(), *g);
          continue;
        }
        // Appended piece by piece: "p" + std::to_string(…) trips g++ 12's false -Wrestrict at -O3.
        std::string who = "p";
        who += std::to_string(::getpid());
        who += '.';
        who += std::to_string(index_);
        who += '.';
        who += std::to_string(st->generation);
        if (rogue)
          rogue_count_down(l.name(), st->generation, who);
        else if (std::find(st->arrived.begin(), st->arrived.end(), who) == st->arrived.end())
          count_down(l, st->generation, who);
        const std::int64_t call = mono_ns();
        const auto r = l.wait_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 1500)(rng_)));
        h_.write('W', index_, mono_ns(), l.name(), st->generation, {std::string(to_string(r)), std::to_string(call)});
      } catch (const std::exception& e) {
        h_.write('T', index_, mono_ns(), l.name(), -1, {error_class(e)});
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }

 private:
  // count_down(who), retried with the same id after every error but latch_not_armed.
  void count_down(latch& l, std::int64_t generation, const std::string& who) {
    held_.fetch_add(1);
    for (int attempt = 1;; ++attempt) {
      try {
        const auto r = l.count_down(who);
        h_.write('D', index_, mono_ns(), l.name(), generation,
                 {r.counted ? "1" : "0", std::to_string(r.remaining), std::to_string(attempt), who});
        break;
      } catch (const latch_not_armed&) {
        h_.write('D', index_, mono_ns(), l.name(), generation, {"x", "-1", std::to_string(attempt), who});
        break;
      } catch (const std::exception& e) {
        h_.write('E', index_, mono_ns(), l.name(), generation, {error_class(e), who});
        if (mono_ns() > a_.until_ns) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    held_.fetch_sub(1);
  }

  // The negative control's naive count-down: arrival, then decrement; every error, and every
  // second reply (taken as lost), sends both again.
  void rogue_count_down(const std::string& name, std::int64_t generation, const std::string& who) {
    held_.fetch_add(1);
    bool retry_once = std::uniform_int_distribution<int>(0, 1)(rng_) == 0;
    for (int attempt = 1; mono_ns() < a_.until_ns; ++attempt) {
      try {
        sql(db_, kRogueArrive, {name, who});
        const auto r = sql(db_, kRogueDecrement, {name});
        h_.write('D', index_, mono_ns(), name, generation,
                 {r.affected > 0 ? "1" : "x", "-1", std::to_string(attempt), who});
        if (!std::exchange(retry_once, false)) break;
      } catch (const std::exception& e) {
        h_.write('E', index_, mono_ns(), name, generation, {error_class(e), who});
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    held_.fetch_sub(1);
  }

  const worker_args& a_;
  const database& db_;
  history_writer& h_;
  std::atomic<int>& held_;
  int index_;
  std::mt19937_64 rng_;
  std::vector<latch> latches_;
};

}  // namespace

int run_latch_worker(const worker_args& a, const database& db, history_writer& h, std::atomic<int>& held) {
  std::vector<std::unique_ptr<latch_thread>> workers;
  for (int t = 0; t < a.cfg.threads; ++t) workers.push_back(std::make_unique<latch_thread>(a, db, h, held, t));
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w] { w->run(); });
  for (auto& t : threads) t.join();
  return 0;
}

bool latch_opens(const database& db, const std::string& name, int count) {
  latch l(db, name);
  auto st = l.state();
  if (!st || st->open) {
    (void)l.try_create(count);
    st = l.state();
    if (!st) return false;
  }
  for (int k = 0; k < count && !st->open; ++k)
    if (l.count_down("probe." + std::to_string(st->generation) + "." + std::to_string(k)).open()) break;
  return l.wait_for(std::chrono::milliseconds(0)) == latch_wait_result::open;
}

}  // namespace sqllock::fault
