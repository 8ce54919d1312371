#include "fault/worker.hpp"

#include <unistd.h>

#include <iostream>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "fault/board.hpp"
#include "fault/guarded_write.hpp"
#include "fault/history.hpp"
#include "fault/latch_worker.hpp"
#include "fault/locker.hpp"
#include "fault/multi_worker.hpp"
#include "fault/net_link.hpp"
#include "fault/queue_holder.hpp"
#include "fault/schema.hpp"
#include "fault/semaphore_holder.hpp"
#include "sqllock/error.hpp"

namespace sqllock::fault {

// Hold times as in the plan: 90% 0–20 ms, 9% 50–500 ms, 1% 0.5–2 leases (forces renewals).
std::chrono::milliseconds draw_hold(std::mt19937_64& rng, std::chrono::milliseconds lease) {
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::chrono::milliseconds(std::uniform_int_distribution<std::int64_t>(lo, hi)(rng));
  };
  const int p = std::uniform_int_distribution<int>(0, 99)(rng);
  if (p < 90) return pick(0, 20);
  if (p < 99) return pick(50, 500);
  return pick(lease.count() / 2, lease.count() * 2);
}

const char* error_class(const std::exception& e) {
  if (dynamic_cast<const outcome_unknown*>(&e)) return "outcome_unknown";
  if (dynamic_cast<const connection_error*>(&e)) return "connection_error";
  if (dynamic_cast<const backend_error*>(&e)) return "backend_error";
  if (dynamic_cast<const not_held*>(&e)) return "not_held";
  if (dynamic_cast<const not_supported*>(&e)) return "not_supported";
  if (dynamic_cast<const error*>(&e)) return "error";
  return "std_exception";
}

namespace {

class worker_thread {
 public:
  worker_thread(const worker_args& a, const database& db, const database& data, history_writer& h, board& b, int index)
      : a_(a), db_(db), data_(data), h_(h), board_(b), held_(b.held(a.slot)), index_(index),
        rng_(std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 16) ^
             static_cast<std::uint64_t>(index)),
        writer_(a.uri, db.dialect(), a.cfg.ctl != control::unguarded_write) {}

  void run() {
    std::unique_ptr<locker> lk;  // made by the first lock call: a lock kind may be refused there
    const auto& stmts = data_statements(db_.dialect());
    while (mono_ns() < a_.until_ns) {
      const int i = std::uniform_int_distribution<int>(0, a_.cfg.resources - 1)(rng_);
      const std::string res = resource_name(i);
      const auto hold_for = draw_hold(rng_, a_.cfg.lease);
      const bool reenter = std::uniform_int_distribution<int>(0, 9)(rng_) == 0;
      // Queued kinds: one wait in four lasts 3 L, so that places wait through a dead head's lease.
      const bool queued_kind = queued(a_.cfg.kind);
      const auto wait = queued_kind && std::uniform_int_distribution<int>(0, 3)(rng_) == 0
                            ? std::chrono::milliseconds(3 * a_.cfg.lease)
                            : std::chrono::milliseconds(std::chrono::seconds(1));
      pending p;
      p.key = res;
      hold_hooks hooks;
      hooks.body = [&](section& s) { section_body(s, res, hold_for, reenter, stmts, p); };
      hooks.before_release = [&] {
        held_.fetch_sub(1);
        h_.write('Y', index_, mono_ns(), p.key, p.fence);
      };
      hooks.on_lost = [&](std::int64_t fence) { h_.write('L', index_, mono_ns(), p.key, fence); };
      p.called = mono_ns();
      try {
        if (!lk)
          lk = make_locker(a_.cfg, db_, index_, [this](std::int64_t until) { board_.section_until(a_.slot, until); });
        const auto r = lk->hold(i, wait, hooks);
        if (!r) {
          if (queued_kind) h_.write('G', index_, mono_ns(), res, -1, {std::to_string(p.called)});
          continue;
        }
        if (p.transactional) {
          // The section's writes committed (ok), maybe committed (unk) or rolled back with the lock.
          const char* outcome = *r == release_result::ok ? "ok" : *r == release_result::unknown ? "unk" : "rej";
          if (p.fenced)
            h_.write('F', index_, p.fenced_done, p.key, p.fence,
                     {p.fenced_ok ? outcome : "rej", std::to_string(p.fenced_sent)});
          if (p.unfenced) h_.write('U', index_, p.unfenced_done, p.key, p.fence, {outcome});
        }
        h_.write('X', index_, mono_ns(), p.key, p.fence, {to_string(*r)});
      } catch (const std::exception& e) {
        h_.write('T', index_, mono_ns(), res, -1, {error_class(e), std::to_string(p.called)});
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }

 private:
  // What a transactional section did, written once the commit's outcome is known.
  struct pending {
    std::string key;  // the history's resource: the lock's name, or slot_key(name, slot) for a permit
    std::int64_t fence = -1;
    std::int64_t called = 0;  // when the acquire call began
    bool transactional = false;
    bool fenced = false, fenced_ok = false, unfenced = false;
    std::int64_t fenced_sent = 0, fenced_done = 0, unfenced_done = 0;
  };

  void section_body(section& s, const std::string& res, std::chrono::milliseconds hold_for, bool reenter,
                    const data_sql& stmts, pending& p) {
    const std::int64_t t_acquired = mono_ns();
    held_.fetch_add(1);
    board_.section_until(a_.slot, t_acquired + std::chrono::nanoseconds(hold_for).count());
    p.fence = s.fence();
    p.transactional = s.transactional();
    // A permit's section is one slot's: its fence rises per (name, slot), so its counter and
    // history lines are the slot's.
    if (const auto* slotted = dynamic_cast<const slot_section*>(&s)) p.key = slot_key(res, slotted->slot());
    // A queued lock's section says its mode; a read section only reads.
    const auto* queue_mode = dynamic_cast<const queue_section*>(&s);
    const bool reading = queue_mode && !queue_mode->write();
    const std::string& key = p.key;
    // The section's statements: in the lock's transaction, or on the handle that reaches the
    // server directly (the same handle as the lock's when the run has no network faults).
    test::pooled_section direct(data_, p.fence);
    test::lock_section& io = p.transactional ? s : direct;
    std::int64_t u = -1, db_us = 0, g = -1;
    try {
      const auto r = io.exec(stmts.read, {key});
      if (!r.rows.empty()) {  // no row: a slot of the count-then-insert control (>= N)
        u = std::stoll(r.rows.at(0).at(0).value_or("0"));
        db_us = std::stoll(r.rows.at(0).at(1).value_or("0"));
        g = std::stoll(r.rows.at(0).at(2).value_or("0"));
      }
    } catch (const error&) {
    }
    std::vector<std::string> a_fields{std::to_string(db_us), std::to_string(u), std::to_string(p.called)};
    if (queue_mode) a_fields.emplace_back(reading ? "r" : "w");
    h_.write('A', index_, t_acquired, key, p.fence, a_fields);
    // A leased write hold's claim, for the guarded write at the end (fault/guarded_write.hpp).
    const auto claim = claim_at_start([&] { return reading || g < 0 ? std::optional<lease_claim>() : s.claim(); });
    if (reenter) {
      try {
        if (const auto inner = s.reenter()) h_.write('N', index_, mono_ns(), key, p.fence, {std::to_string(*inner)});
      } catch (const error&) {
        h_.write('N', index_, mono_ns(), key, p.fence, {"-3"});
      }
    }
    std::this_thread::sleep_for(hold_for);
    if (reading) {
      // The last read: u again (a write landing inside a read hold changes it) and the clock.
      try {
        const auto r = io.exec(stmts.read, {key});
        if (!r.rows.empty())
          h_.write('R', index_, mono_ns(), key, p.fence,
                   {r.rows.at(0).at(1).value_or("0"), r.rows.at(0).at(0).value_or("-1")});
      } catch (const error&) {
      }
      return;
    }
    p.fenced_sent = mono_ns();
    const char* fenced = "rej";
    try {
      const auto r = p.fence >= 0 ? io.exec(stmts.fenced_write, {key, p.fence}) : io.exec(stmts.plain_write, {key});
      fenced = r.affected > 0 ? "ok" : "rej";
    } catch (const connection_error&) {
      fenced = "unk";  // includes outcome_unknown: the statement may have committed
    } catch (const error&) {
      fenced = "rej";
    }
    p.fenced_done = mono_ns();
    p.fenced = true;
    p.fenced_ok = std::string_view(fenced) == "ok";
    if (!p.transactional) h_.write('F', index_, p.fenced_done, key, p.fence, {fenced, std::to_string(p.fenced_sent)});
    if (u < 0) return;
    const char* unfenced = "ok";
    try {
      if (io.exec(stmts.unfenced_write, {key, u + 1}).affected == 0) unfenced = "rej";
    } catch (const connection_error&) {
      unfenced = "unk";
    } catch (const error&) {
      unfenced = "rej";
    }
    p.unfenced_done = mono_ns();
    p.unfenced = std::string_view(unfenced) == "ok";
    if (!p.transactional) h_.write('U', index_, p.unfenced_done, key, p.fence, {unfenced});
    if (claim) {
      const auto w = writer_.write(*claim, {{key, g + 1}});
      h_.write('W', index_, mono_ns(), key, p.fence, w.history_fields());
    }
  }

  const worker_args& a_;
  const database& db_;    // the locks'
  const database& data_;  // the sections' statements'
  history_writer& h_;
  board& board_;
  std::atomic<int>& held_;
  int index_;
  std::mt19937_64 rng_;
  guarded_writer writer_;
};

// Connects to `uri` (pool: a connection per thread and two more), retrying while the server is
// being restarted; nullopt when the run ended first.
std::optional<database> connect(const worker_args& a, const std::string& uri) {
  for (;;) {
    try {
      database_options o;
      o.pool_size = static_cast<std::size_t>(a.cfg.threads) + 2;
      o.connect_timeout = std::chrono::seconds(2);
      return database(uri, o);
    } catch (const connection_error&) {
      if (mono_ns() > a.until_ns) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

}  // namespace

int run_worker(const worker_args& a) {
  history_writer h(a.history);
  board b(a.board_path, false);
  auto& held = b.held(a.slot);
  held.store(0);
  std::unique_ptr<net_link> link;
  if (a.net) link = std::make_unique<net_link>(a.uri, b, a.slot);
  // The first connection may meet a server that the nemesis is restarting: keep trying.
  std::optional<database> db = connect(a, link ? link->uri() : a.uri);
  if (!db) return 0;
  std::optional<database> direct;
  const std::string& data_uri = a.data_uri.empty() ? a.uri : a.data_uri;
  if ((link || data_uri != a.uri) && !(direct = connect(a, data_uri))) return 0;
  const database& data = direct ? *direct : *db;
  if (a.cfg.kind == lock_kind::latch) return run_latch_worker(a, *db, h, held);
  if (a.cfg.kind == lock_kind::multi) return run_multi_worker(a, *db, data, h, b);
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<worker_thread>> workers;
  for (int t = 0; t < a.cfg.threads; ++t) workers.push_back(std::make_unique<worker_thread>(a, *db, data, h, b, t));
  for (auto& w : workers) threads.emplace_back([&w] { w->run(); });
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace sqllock::fault
