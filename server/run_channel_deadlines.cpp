// RunChannel's deadlines for workers' answers: how long loading and each
// iteration may take on a worker, and what happens to a worker that misses
// one — it is dropped from the run (which re-plans over the others, as for
// a lost worker), told to abort the run, and left out of placement until it
// answers again.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "protocol/messages.h"
#include "server/run_channel.h"

namespace lizard {

void RunChannel::expect_answers(const char* what, int64_t iteration, double seconds,
                                const std::vector<std::string>& from) {
  deadline_.what = what;
  deadline_.iteration = iteration;
  deadline_.seconds = seconds;
  deadline_.from = from;
  deadline_.since.assign(from.size(), SteadyClock::now());
  deadline_.next_check = SteadyClock::now();
}

// The floor, plus the rows' bytes at a conservative rate: reading or
// generating them on the worker, and compiling the kernels.
double RunChannel::load_deadline_s(int64_t rows) const {
  if (ctx_.load_timeout_s <= 0) return 0;
  const Manifest& m = run_->program->image.manifest;
  int64_t row_bytes = 0;
  for (const auto& f : m.dataset) {
    auto width = row_width(f, m, run_->request.params);
    if (width.ok()) row_bytes += *width * static_cast<int64_t>(dtype_size(f.type));
  }
  const double bytes = static_cast<double>(rows) * static_cast<double>(row_bytes);
  return ctx_.load_timeout_s + (ctx_.load_bytes_per_s > 0 ? bytes / ctx_.load_bytes_per_s : 0);
}

double RunChannel::iteration_deadline_s() const {
  if (ctx_.iteration_timeout_s <= 0) return 0;
  return ctx_.iteration_timeout_s +
         DriverContext::kIterationSlowdown * slowest_iteration_ms_ / 1000.0;
}

void RunChannel::heard_from(const std::string& worker_id) {
  for (size_t d = 0; d < deadline_.from.size(); ++d)
    if (deadline_.from[d] == worker_id) deadline_.since[d] = SteadyClock::now();
}

Status RunChannel::missed_deadline(const std::string& wire_id, const std::string& worker_id) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.4g", deadline_.seconds);
  const std::string what = std::string(deadline_.what) == "iteration"
                               ? "iteration " + std::to_string(deadline_.iteration)
                               : std::string(deadline_.what);
  const std::string why = "missed the " + what + " deadline (" + seconds + " s)";
  spdlog::warn("{}: worker {} {}; dropping it from the run", run_->id, worker_id, why);
  // Its kernels may never return: it stops them, and takes no run until it
  // answers again.
  (void)ctx_.workers->send(worker_id,
                           OutgoingFrame::control(encode(RunAbortMsg{wire_id, why}.to_message())));
  ctx_.workers->missed_deadline(worker_id, why + " of run " + run_->id);
  drop_executors_of(worker_id);
  deadline_.seconds = 0;
  return worker_lost("worker " + worker_id + " " + why);
}

}  // namespace lizard
