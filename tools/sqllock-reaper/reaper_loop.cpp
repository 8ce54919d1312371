#include "reaper_loop.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>

#include "cli.hpp"
#include "log.hpp"
#include "metrics.hpp"
#include "sqllock/error.hpp"

namespace sqllock::reaper {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// Sleeps for `d` or until stop is requested.
void sleep_unless_stopped(std::chrono::milliseconds d, const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, stop, d, [] { return false; });
}

// The exit status for a failed pass, and whether retrying may help.
struct failure {
  int code;
  bool retry;
  std::string what;
};

failure classify(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const invalid_argument& x) {
    return {cli::exit_usage, false, x.what()};
  } catch (const not_supported& x) {
    return {cli::exit_usage, false, x.what()};
  } catch (const connection_error& x) {
    return {cli::exit_unreachable, true, std::string("database unreachable: ") + x.what()};
  } catch (const schema_error& x) {
    return {cli::exit_schema, true, x.what()};
  } catch (const error& x) {
    return {cli::exit_database, true, std::string("database error: ") + x.what()};
  } catch (const std::exception& x) {
    return {cli::exit_internal, true, std::string("internal error: ") + x.what()};
  }
}

// Delay before retry number `failures` (1, 2, …): 1 s doubling, capped, with jitter in
// [d/2, d] so that reapers restarted together do not retry in lockstep.
std::chrono::milliseconds retry_delay(int failures, std::chrono::milliseconds cap) {
  static thread_local std::minstd_rand rng{std::random_device{}()};
  std::chrono::milliseconds d = 1s;
  for (int i = 1; i < failures && d < cap; ++i) d *= 2;
  d = std::min(d, cap);
  std::uniform_int_distribution<long long> pick(d.count() / 2, d.count());
  return std::chrono::milliseconds(pick(rng));
}

class pass_runner {
 public:
  explicit pass_runner(const config& cfg) : cfg_(cfg) {}

  // One pass; returns its failure, if any.
  std::optional<failure> pass(std::stop_token stop) {
    const auto started = steady::now();
    std::optional<failure> failed;
    // Counted batch by batch: a pass that fails part-way has still deleted what earlier batches
    // committed, and the metrics and the log line say so.
    std::uint64_t reaped = 0;
    try {
      if (!db_) db_.emplace(cfg_.uri, cfg_.db_options);  // connects once, or throws
      reap_options o = cfg_.reap;
      o.stop = stop;
      o.on_batch = [&reaped](std::uint64_t deleted) { reaped += deleted; };
      sqllock::reap(*db_, o);
    } catch (...) {
      failed = classify(std::current_exception());
    }
    const auto took = steady::now() - started;
    ++m_.passes;
    m_.last_pass_duration = took;
    m_.rows_reaped += reaped;
    last_reaped_ = reaped;
    if (failed) {
      ++m_.errors;
      ++consecutive_failures_;
    } else {
      m_.last_success = std::chrono::system_clock::now();
      if (consecutive_failures_ > 0)
        log_event(level::info, "recovered",
                  {{"table", table()}, {"failed_passes", std::to_string(consecutive_failures_)}});
      consecutive_failures_ = 0;
      log_event(level::info, "pass",
                {{"table", table()},
                 {"reaped", std::to_string(reaped)},
                 {"duration_ms", millis_text(took)},
                 {"errors_total", std::to_string(m_.errors)}});
    }
    last_took_ = took;
    write_metrics();
    return failed;
  }

  void log_failure(const failure& f, std::optional<std::chrono::milliseconds> retry_in) {
    std::vector<log_field> fields{{"table", table()},
                                  {"reaped", std::to_string(last_reaped_)},
                                  {"duration_ms", millis_text(last_took_)},
                                  {"errors_total", std::to_string(m_.errors)},
                                  {"error", f.what}};
    if (retry_in) fields.emplace_back("retry_in_ms", std::to_string(retry_in->count()));
    log_event(level::error, "pass", fields);
  }

  int consecutive_failures() const { return consecutive_failures_; }

  // Writes the metrics file, if any. Returns false (after logging) when it cannot.
  bool write_metrics() {
    if (!cfg_.metrics_file) return true;
    try {
      write_file_atomically(*cfg_.metrics_file, m_.to_prometheus(table()));
      return true;
    } catch (const std::exception& e) {
      log_event(level::error, "metrics", {{"error", e.what()}});
      return false;
    }
  }

 private:
  const std::string& table() const { return cfg_.db_options.table; }

  const config& cfg_;
  std::optional<database> db_;
  metrics m_;
  int consecutive_failures_ = 0;
  std::chrono::nanoseconds last_took_{0};
  std::uint64_t last_reaped_ = 0;  // rows the last pass deleted, failed or not
};

}  // namespace

int run(const config& cfg, std::stop_token stop) {
  pass_runner runner(cfg);
  // An unwritable metrics file is a configuration mistake: refuse to start rather than run blind.
  if (!runner.write_metrics()) return cli::exit_usage;
  log_event(level::info, "start",
            {{"table", cfg.db_options.table},
             {"mode", cfg.interval ? "interval" : "once"},
             {"interval_ms", cfg.interval ? std::to_string(cfg.interval->count()) : "0"},
             {"batch", std::to_string(cfg.reap.batch_size)},
             {"grace_ms", std::to_string(cfg.reap.grace.count())}});

  if (!cfg.interval) {
    const auto failed = runner.pass(stop);
    if (!failed) return cli::exit_ok;
    runner.log_failure(*failed, std::nullopt);
    return failed->code;
  }
  const auto cap = std::min<std::chrono::milliseconds>(*cfg.interval, 60s);
  while (!stop.stop_requested()) {
    const auto started = steady::now();
    std::chrono::milliseconds wait = *cfg.interval;
    if (const auto failed = runner.pass(stop)) {
      if (!failed->retry) {
        runner.log_failure(*failed, std::nullopt);
        return failed->code;
      }
      wait = retry_delay(runner.consecutive_failures(), cap);
      runner.log_failure(*failed, wait);
    } else {
      // Passes start every interval, however long each took.
      const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - started);
      wait = std::max<std::chrono::milliseconds>(wait - spent, 0ms);
    }
    sleep_unless_stopped(wait, stop);
  }
  return cli::exit_ok;
}

}  // namespace sqllock::reaper
