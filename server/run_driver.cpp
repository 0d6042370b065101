#include "server/run_driver.h"

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "runlog/log_format.h"
#include "server/run_outputs.h"

namespace lizard {

RunDriver::RunDriver(std::shared_ptr<RunRecord> run, DriverContext ctx)
    : run_(std::move(run)),
      ctx_(std::move(ctx)),
      channel_(run_, ctx_),
      recovery_(run_, ctx_),
      loader_(run_, ctx_, &channel_),
      loop_(run_, ctx_, &channel_, &recovery_) {}

RunDriver::~RunDriver() {
  channel_.close();
  join();
}

void RunDriver::join() {
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

// The executors go back before the record is finished, so that whoever
// learns of the end (a waiting POST, GET /clients) finds them free.
void RunDriver::start(std::function<void(const std::string&)> release) {
  channel_.start_clock();
  thread_ = std::thread([this, release = std::move(release)] {
    const auto t0 = channel_.started();
    Status st;
    try {  // the run fails; the server stays up
      st = drive();
    } catch (const std::bad_alloc&) {
      st = too_large("the server ran out of memory for this run");
    } catch (const std::exception& e) {
      st = internal_error(std::string("internal error: ") + e.what());
    }
    ctx_.book->update(run_, [&](RunRecord& r) { r.elapsed_ms = ms_since(t0); });
    spdlog::debug("{}: the driver ends after {:.3f} ms", run_->id, ms_since(t0));
    release(run_->id);
    if (ctx_.logs) {
      ctx_.logs->note_cut(run_->id, kServerLogSource, 0, 0);
      ctx_.logs->forget(run_->id);
    }
    ctx_.book->finish(run_, st);
    exited_ = true;
  });
}

Status RunDriver::drive() {
  const ProgramEntry& prog = *run_->program;
  const Manifest& m = prog.image.manifest;
  const RunRequest& req = run_->request;
  RunSections s;
  LIZARD_ASSIGN_OR_RETURN(s.state, make_section(m.state, m, req.params));
  LIZARD_ASSIGN_OR_RETURN(s.agg, make_section(m.aggregate, m, req.params));
  // A cancel or shutdown ends a hook that is running.
  HookProcessOptions hook_options = ctx_.hooks;
  hook_options.interrupted = [this] { return channel_.interrupted(); };
  if (ctx_.logs) hook_options.output = ctx_.logs->hook_output(run_->id);
  LIZARD_ASSIGN_OR_RETURN(
      s.hooks, prog.hooks->start(m, req.params, req.spec, s.state, s.agg, std::move(hook_options)));
  LIZARD_ASSIGN_OR_RETURN(s.step,
                          IterationStep::make(m, req.params, s.hooks.get(), req.max_iterations));
  if (req.state)
    s.state.bytes = req.state->bytes;
  else
    LIZARD_RETURN_IF_ERROR(s.hooks->init_state(&s.state).status());
  s.initial_state = s.state;
  return run_attempts(&s);
}

// Each attempt plans the rows over the executors the run holds and runs the
// iterations from where the last one left them; a lost worker starts the
// next attempt (RunRecovery says where it begins).
Status RunDriver::run_attempts(RunSections* s) {
  constexpr int kMaxAttempts = 20;
  int64_t it = 0;
  bool done = false;
  recovery_.begin(s, &it, &done);
  bool fold_tree = true;  // until the tree fails once: then the server folds
  for (int attempt = 0;; ++attempt) {
    const std::string wire_id = run_->id + "." + std::to_string(attempt);
    std::vector<std::string> participants;
    Status st = loader_.wait_for_placement(recovery_.last_loss());
    if (st.ok()) {
      // `compiling` is set while it loads when a worker says it compiles.
      auto loaded = loader_.load(wire_id, fold_tree);
      ctx_.book->update(run_, [](RunRecord& r) {
        r.compiling = nullptr;
        r.compiling_build.clear();
      });
      st = loaded.status();
      if (st.ok()) participants = std::move(loaded).value();
      if (st.ok()) recovery_.note_plan(participants);
      if (st.ok()) ctx_.book->persist(run_);  // its executors: a restart waits for as many
    }
    if (st.ok()) st = loop_.run(wire_id, participants, loader_.fold_tree(), s, &it, &done);
    bool gathering = false;
    if (st.ok()) {
      gathering = true;
      st = gather_outputs(run_, ctx_, &channel_, wire_id, participants, *s);  // ends the run
      if (st.ok()) return st;
    } else {
      channel_.end_on_workers(wire_id, participants, false);
    }
    if (fold_tree && (loader_.fold_tree_failed() || loop_.fold_tree_failed()) &&
        attempt + 1 < kMaxAttempts) {
      // Workers that cannot reach one another: the same workers, no tree.
      fold_tree = false;
      ctx_.book->update(run_, [](RunRecord& r) { r.phases.fold_tree_failed = true; });
      recovery_.after_loss(st, gathering, channel_.take_lost_workers(), s, &it, &done,
                           "fold_tree_failed");
      continue;
    }
    if (st.code() != Code::kWorkerLost || attempt + 1 >= kMaxAttempts) return st;
    recovery_.after_loss(st, gathering, channel_.take_lost_workers(), s, &it, &done);
  }
}

}  // namespace lizard
