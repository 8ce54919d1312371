#include "fault/multi_worker.hpp"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <stop_token>
#include <thread>
#include <vector>

#include "fault/guarded_write.hpp"
#include "fault/schema.hpp"
#include "sqllock/error.hpp"
#include "sqllock/multi_lock.hpp"
#include "sqllock/table_lock.hpp"
#include "support/fresh_database.hpp"
#include "support/lock_kinds.hpp"

namespace sqllock::fault {
namespace {

using test::release_result;

// How a release went, in the history's spelling (release_result's).
template <class F>
release_result released(F&& release) {
  try {
    release();
    return release_result::ok;
  } catch (const not_held&) {
    return release_result::not_held;
  } catch (const lock_lost&) {
    return release_result::lost;
  } catch (const outcome_unknown&) {
    return release_result::unknown;
  } catch (const error&) {
    return release_result::error;
  }
}

// The set as held: by sqllock's multi_lock, or name by name by the sequential-multi control.
class held_set {
 public:
  virtual ~held_set() = default;
  virtual std::int64_t fence(std::size_t j) const = 0;  // of the j-th picked name
  virtual std::vector<std::stop_token> lost_tokens() const = 0;
  // The set's claim for a guard; nullopt for the control's names, which have none as one set.
  virtual std::optional<lease_claim> claim() const = 0;
  virtual release_result release() = 0;
};

class multi_set final : public held_set {
 public:
  multi_set(std::unique_ptr<multi_lock> l, std::vector<std::string> picked)
      : l_(std::move(l)), picked_(std::move(picked)) {}
  std::int64_t fence(std::size_t j) const override { return l_->fence(picked_.at(j)); }
  std::vector<std::stop_token> lost_tokens() const override { return {l_->lost_token()}; }
  std::optional<lease_claim> claim() const override { return l_->claim(); }
  release_result release() override {
    return released([&] { l_->release(); });
  }

 private:
  std::unique_ptr<multi_lock> l_;
  std::vector<std::string> picked_;
};

// The negative control: one autocommit table_lock per name, in the picked order.
class sequential_set final : public held_set {
 public:
  explicit sequential_set(std::vector<std::unique_ptr<table_lock>> locks) : locks_(std::move(locks)) {}
  std::int64_t fence(std::size_t j) const override { return locks_.at(j)->fence(); }
  std::vector<std::stop_token> lost_tokens() const override {
    std::vector<std::stop_token> out;
    for (const auto& l : locks_) out.push_back(l->lost_token());
    return out;
  }
  std::optional<lease_claim> claim() const override { return std::nullopt; }
  release_result release() override {
    auto worst = release_result::ok;
    for (auto it = locks_.rbegin(); it != locks_.rend(); ++it) {
      const auto r = released([&] { (*it)->release(); });
      if (r != release_result::ok) worst = r;
    }
    return worst;
  }

 private:
  std::vector<std::unique_ptr<table_lock>> locks_;
};

class multi_thread {
 public:
  multi_thread(const worker_args& a, const database& db, const database& data, history_writer& h, board& b, int index)
      : a_(a), db_(db), data_(data), h_(h), board_(b), held_(b.held(a.slot)), index_(index),
        rng_(std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 16) ^
             static_cast<std::uint64_t>(index)),
        writer_(a.uri, db.dialect(), a.cfg.ctl != control::unguarded_write) {}

  void run() {
    const auto k = static_cast<std::size_t>(a_.cfg.names_per_set);
    const bool rogue = a_.cfg.ctl == control::sequential_multi && index_ == 0;
    std::vector<int> all(static_cast<std::size_t>(a_.cfg.resources));
    std::iota(all.begin(), all.end(), 0);
    for (std::int64_t n = 0; mono_ns() < a_.until_ns; ++n) {
      std::shuffle(all.begin(), all.end(), rng_);
      std::vector<std::string> picked;
      for (std::size_t j = 0; j < k; ++j) picked.push_back(resource_name(all[j]));
      const std::string set_id = std::string(kSetOwnerPrefix) + std::to_string(::getpid()) + "." +
                                 std::to_string(index_) + "." + std::to_string(n);
      const std::int64_t called = mono_ns();
      try {
        std::unique_ptr<held_set> set = rogue ? take_sequentially(picked, set_id) : take(picked, set_id);
        if (!set) continue;
        section(*set, picked, set_id, called);
      } catch (const std::exception& e) {
        h_.write('T', index_, mono_ns(), picked.front(), -1, {error_class(e)});
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }

 private:
  std::unique_ptr<held_set> take(const std::vector<std::string>& picked, const std::string& set_id) {
    multi_lock_options o;
    o.ttl = a_.cfg.lease;
    o.owner = set_id;
    o.on_unlock_error = [](const std::exception&) {};
    auto l = std::make_unique<multi_lock>(db_, picked, o);
    if (!l->try_lock_for(std::chrono::seconds(1))) return nullptr;
    return std::make_unique<multi_set>(std::move(l), picked);
  }

  // Name by name, no waiting; on a refusal the names taken so far are released (by their
  // destructors, also when an acquire throws).
  std::unique_ptr<held_set> take_sequentially(const std::vector<std::string>& picked, const std::string& set_id) {
    table_lock_options o;
    o.ttl = a_.cfg.lease;
    o.owner = set_id;
    o.on_unlock_error = [](const std::exception&) {};
    std::vector<std::unique_ptr<table_lock>> locks;
    for (const auto& name : picked) {
      locks.push_back(std::make_unique<table_lock>(db_, name, o));
      if (!locks.back()->try_lock()) {
        locks.pop_back();
        while (!locks.empty()) locks.pop_back();  // release in reverse order
        return nullptr;
      }
    }
    return std::make_unique<sequential_set>(std::move(locks));
  }

  int vthread(std::size_t j) const { return index_ * a_.cfg.names_per_set + static_cast<int>(j); }

  void section(held_set& set, const std::vector<std::string>& picked, const std::string& set_id, std::int64_t called) {
    const std::int64_t t_acquired = mono_ns();
    const auto& stmts = data_statements(db_.dialect());
    std::vector<std::int64_t> fences;
    std::vector<std::string> m{set_id};
    for (std::size_t j = 0; j < picked.size(); ++j) {  // throws not_held when a name was lost already
      fences.push_back(set.fence(j));
      m.push_back(picked[j] + ":" + std::to_string(fences.back()));
    }
    // Any name's loss is the set's: every name's hold hears of it — from the grant on, before the
    // section's first statement (a loss while it waits for the server is told then, not after).
    std::vector<std::unique_ptr<std::stop_callback<std::function<void()>>>> on_lost;
    for (const auto& token : set.lost_tokens())
      on_lost.push_back(std::make_unique<std::stop_callback<std::function<void()>>>(
          token, std::function<void()>([&, this] {
            for (std::size_t j = 0; j < picked.size(); ++j) h_.write('L', vthread(j), mono_ns(), picked[j], fences[j]);
          })));
    held_.fetch_add(1);
    h_.write('M', index_, t_acquired, set_id, -1, m);
    std::vector<std::int64_t> u(picked.size(), -1), g(picked.size(), -1);
    for (std::size_t j = 0; j < picked.size(); ++j) {
      std::int64_t db_us = 0;
      try {
        const auto r = test::sql(data_, stmts.read, {picked[j]});
        if (!r.rows.empty()) {
          u[j] = std::stoll(r.rows.at(0).at(0).value_or("0"));
          db_us = std::stoll(r.rows.at(0).at(1).value_or("0"));
          g[j] = std::stoll(r.rows.at(0).at(2).value_or("0"));
        }
      } catch (const error&) {
      }
      h_.write('A', vthread(j), t_acquired, picked[j], fences[j],
               {std::to_string(db_us), std::to_string(u[j]), std::to_string(called), set_id});
    }
    // The set's claim, for one guarded write of every name's g at the end (fault/guarded_write.hpp).
    const auto claim = claim_at_start([&] { return set.claim(); });
    const auto hold_for = draw_hold(rng_, a_.cfg.lease);
    board_.section_until(a_.slot, mono_ns() + std::chrono::nanoseconds(hold_for).count());
    std::this_thread::sleep_for(hold_for);
    for (std::size_t j = 0; j < picked.size(); ++j) {
      const std::int64_t sent = mono_ns();
      const char* fenced = "rej";
      try {
        fenced = test::sql(data_, stmts.fenced_write, {picked[j], fences[j]}).affected > 0 ? "ok" : "rej";
      } catch (const connection_error&) {
        fenced = "unk";  // includes outcome_unknown: the statement may have committed
      } catch (const error&) {
      }
      h_.write('F', vthread(j), mono_ns(), picked[j], fences[j], {fenced, std::to_string(sent)});
      if (u[j] < 0) continue;
      const char* unfenced = "ok";
      try {
        if (test::sql(data_, stmts.unfenced_write, {picked[j], u[j] + 1}).affected == 0) unfenced = "rej";
      } catch (const connection_error&) {
        unfenced = "unk";
      } catch (const error&) {
        unfenced = "rej";
      }
      h_.write('U', vthread(j), mono_ns(), picked[j], fences[j], {unfenced});
    }
    std::vector<std::pair<std::string, std::int64_t>> counters;
    for (std::size_t j = 0; j < picked.size(); ++j)
      if (g[j] >= 0) counters.emplace_back(picked[j], g[j] + 1);
    if (claim && counters.size() == picked.size()) {
      const auto w = writer_.write(*claim, counters);
      for (std::size_t j = 0; j < picked.size(); ++j)
        h_.write('W', vthread(j), mono_ns(), picked[j], fences[j], w.history_fields());
    }
    held_.fetch_sub(1);
    for (std::size_t j = 0; j < picked.size(); ++j) h_.write('Y', vthread(j), mono_ns(), picked[j], fences[j]);
    on_lost.clear();
    const auto r = set.release();
    for (std::size_t j = 0; j < picked.size(); ++j)
      h_.write('X', vthread(j), mono_ns(), picked[j], fences[j], {to_string(r)});
  }

  const worker_args& a_;
  const database& db_;    // the sets'
  const database& data_;  // the sections' statements'
  history_writer& h_;
  board& board_;
  std::atomic<int>& held_;
  int index_;
  std::mt19937_64 rng_;
  guarded_writer writer_;
};

}  // namespace

int run_multi_worker(const worker_args& a, const database& db, const database& data, history_writer& h, board& b) {
  std::vector<std::unique_ptr<multi_thread>> workers;
  for (int t = 0; t < a.cfg.threads; ++t) workers.push_back(std::make_unique<multi_thread>(a, db, data, h, b, t));
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w] { w->run(); });
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace sqllock::fault
