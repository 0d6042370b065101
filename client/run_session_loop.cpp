// RunSession's loop: the iterations of a run placed on this worker alone,
// driven here rather than by the server, so that no round trip to the server
// separates them.  Each iteration runs on the session's IterationEngine, as
// an iteration the server sends does, and then the run's IterationStep —
// the server's own: the partials folded into the reducers' identity, the
// hooks, the stop rule — and reports the aggregate and the new state to the
// server, which records them (and resumes from them should this worker be
// lost) without waiting on them.  A run_end arriving meanwhile (the run was
// cancelled or failed) ends the loop before the next iteration.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "client/run_session.h"
#include "common/clock.h"
#include "hooks/iteration_step.h"

namespace lizard {
namespace {

// Per-iteration times of a loop, in ms: totals, and medians, which leave out
// the first iteration's warm-up.
class LoopTimes {
 public:
  explicit LoopTimes(int64_t iterations) {
    for (auto& c : columns_)
      c.reserve(static_cast<size_t>(std::clamp<int64_t>(iterations, 0, 1 << 16)));
  }
  void add(double iteration, double waiting, double in_calls, double in_kernels, double in_hook) {
    const double row[kColumns] = {iteration, waiting, in_calls, in_kernels, in_hook};
    for (size_t c = 0; c < kColumns; ++c) {
      if (rows_ == 0) first_[c] = row[c];
      totals_[c] += row[c];
      if (columns_[c].size() < columns_[c].capacity()) columns_[c].push_back(row[c]);
    }
    ++rows_;
  }
  std::string summary() {
    static const char* const names[kColumns] = {"iterations", "waiting for the executors",
                                                "in their calls", "in kernels",
                                                "in the update hook"};
    std::string out;
    for (size_t c = 0; c < kColumns; ++c)
      out += fmt::format("{}{} {:.3f} ms (median {:.1f} us, first {:.1f} us)", c ? ", " : "",
                         names[c], totals_[c], median(&columns_[c]) * 1e3, first_[c] * 1e3);
    return out;
  }

 private:
  static constexpr size_t kColumns = 5;
  static double median(std::vector<double>* v) {
    if (v->size() > 1) v->erase(v->begin());  // the first iteration warms up
    if (v->empty()) return 0;
    std::nth_element(v->begin(), v->begin() + v->size() / 2, v->end());
    return (*v)[v->size() / 2];
  }
  std::vector<double> columns_[kColumns];
  double totals_[kColumns] = {};
  double first_[kColumns] = {};  // the first iteration's row
  int64_t rows_ = 0;
};

}  // namespace

void RunSession::loop_here(const MessageView& m) {
  auto h = LoopMsg::parse(m.header);
  LoopStepMsg failed;
  failed.ok = false;
  if (!h.ok()) {
    spdlog::warn("run {}: {}", run_id_, h.status().message());
    return;
  }
  failed.run_id = h->run_id;
  failed.iteration = h->first_iteration;
  Status st;
  if (!begun_ || h->run_id != run_id_) {
    st = not_found("no such run on this worker");
  } else {
    const Manifest& man = program_->manifest;
    auto state = make_section(man.state, man, params_);
    st = state.status();
    if (st.ok() && m.payload.size() != state->bytes.size())
      st = invalid_argument("loop: state of " + std::to_string(m.payload.size()) +
                            " bytes; expected " + std::to_string(state->bytes.size()));
    if (st.ok()) {
      if (!state->bytes.empty())
        std::memcpy(state->bytes.data(), m.payload.data(), state->bytes.size());
      st = run_loop(h.value(), std::move(state).value(), &failed);
    }
  }
  if (st.ok()) return;
  spdlog::warn("run {}: {}", h->run_id, st.message());
  failed.error = st.message();
  reply(encode(failed.to_message()));
}

// True when a frame for this run arrived (the server ended it) or the
// session is being aborted; the frame is handled once the loop returns.
bool RunSession::loop_interrupted() {
  if (aborting_) return true;
  auto frame = inbox_.try_pop();
  if (!frame) return false;
  stopped_by_ = std::move(frame);
  return true;
}

Status RunSession::run_loop(const LoopMsg& h, SectionBuffer state, LoopStepMsg* failed) {
  if (!ctx_.open_hooks) {
    failed->unsupported = true;
    return unavailable("this worker does not drive loops");
  }
  LoopHookLimits limits;
  limits.interrupted = [this] {
    return aborting_ ? Status(Code::kCancelled, "the run was aborted") : Status::Ok();
  };
  limits.call_timeout_ms = h.hook_timeout_ms;
  limits.output = [this](int64_t iteration, const OutputPipe::Taken& printed) {
    output_.add(-1, iteration, printed);
  };
  const auto t_open = SteadyClock::now();
  auto opened = ctx_.open_hooks(*program_, params_, values_, std::move(limits));
  if (!opened.ok()) {
    failed->unsupported = opened.status().code() == Code::kUnavailable;
    return opened.status();
  }
  std::unique_ptr<LoopHooks> hooks = std::move(opened).value();
  const Manifest& man = program_->manifest;
  LIZARD_ASSIGN_OR_RETURN(IterationStep iteration_step,
                          IterationStep::make(man, params_, hooks.get(), h.max_iterations));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer folded, make_section(man.aggregate, man, params_));
  const double opening_ms = ms_since(t_open);
  const auto t_loop = SteadyClock::now();
  // Where each iteration's time went, for the debug log: the executors (as
  // the worker waits for them, as they count themselves, and in kernels) and
  // the update hook.
  LoopTimes times(h.max_iterations - h.first_iteration);
  auto finished = [&](int64_t iterations) {
    spdlog::debug("run {}: {} iteration(s) here in {:.3f} ms after {:.3f} ms opening the hooks; {}",
                  h.run_id, iterations, ms_since(t_loop), opening_ms, times.summary());
    return Status::Ok();
  };
  // What each iteration reuses: past the first, an iteration allocates
  // nothing here (its reply's buffer comes back from the connection).
  LoopStepMsg step;
  step.run_id = h.run_id;
  for (int64_t it = h.first_iteration; it < h.max_iterations; ++it) {
    if (loop_interrupted()) return finished(it - h.first_iteration);
    failed->iteration = it;
    const auto t0 = SteadyClock::now();
    step.iteration = it;
    LIZARD_RETURN_IF_ERROR(engine_.run(state, it));
    step.kernel_ms = engine_.kernel_ms();
    step.quick_build = engine_.ran_on_quick_build();
    const double waiting = ms_since(t0);
    // The server's own step, here: the executors' partials folded in row
    // order, the hooks, and the stop rule.
    const auto t_fold = SteadyClock::now();
    iteration_step.start(&folded);
    for (const SectionBuffer* a : engine_.partials())
      LIZARD_RETURN_IF_ERROR(iteration_step.fold(&folded, *a, it));
    const auto t_hook = SteadyClock::now();
    auto last = iteration_step.finish(folded, &state, it);
    output_.flush();  // what the update hook printed goes ahead of the step
    LIZARD_ASSIGN_OR_RETURN(step.last, std::move(last));
    times.add(ms_since(t0), waiting, engine_.slowest_call_ms(), step.kernel_ms, ms_since(t_hook));
    step.fold_ms = ms_since(t_fold);  // as the server counts it: the fold and the update hook
    step.ms = ms_since(t0);
    const std::string_view payload[] = {
        {reinterpret_cast<const char*>(folded.bytes.data()), folded.bytes.size()},
        {reinterpret_cast<const char*>(state.bytes.data()), state.bytes.size()}};
    std::string frame = take_frame();
    step.encode_into(&frame, payload, 2);
    reply(std::move(frame));
    if (step.last) return finished(it + 1 - h.first_iteration);
  }
  return finished(h.max_iterations - h.first_iteration);
}

}  // namespace lizard
