// UsageLedger: each user's recent use of the cluster, in executor-seconds
// that fade with a half-life (as Slurm's fair-share usage decays), for the
// scheduler's fair share (scheduler.h): a user who has held many executors
// lately waits behind one who has not.  Also each user's undecayed total,
// for /metrics.
//
// Not thread-safe: the scheduling thread alone advances and reads it.
//
//   UsageLedger ledger(3600);                       // an hour's half-life
//   ledger.advance({{"alice", 4}}, now);           // what each user holds now
//   double recent = ledger.recent("alice");        // executor-seconds
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace lizard {

class UsageLedger {
 public:
  using Clock = std::chrono::steady_clock;
  explicit UsageLedger(double half_life_s = 3600) : half_life_s_(half_life_s) {}

  // Counts what each user held since the last call (`held`: executors by
  // user, as they stand now) and lets every user's recent use fade.
  void advance(const std::map<std::string, int64_t>& held, Clock::time_point now);
  // Executor-seconds of `user`, faded by their age.
  double recent(const std::string& user) const;
  // Executor-seconds of each user since the server started, unfaded.
  const std::map<std::string, double>& totals() const { return totals_; }

 private:
  double half_life_s_;
  bool started_ = false;
  Clock::time_point last_;
  std::map<std::string, int64_t> held_;  // as of `last_`
  std::map<std::string, double> recent_, totals_;
};

}  // namespace lizard
