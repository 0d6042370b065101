#include "hooks/hook_process.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/child_process.h"
#include "hooks/hook_host.h"
#include "runlog/output_lines.h"

namespace lizard {
namespace {

using Clock = std::chrono::steady_clock;

// How often a waiting call looks at options.interrupted.
constexpr int kPollMs = 50;
// How long a process that closed its channel gets to be reaped.
constexpr int kExitWaitMs = 2000;

std::string duration_text(int ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

std::string_view view(const SectionBuffer& s) {
  return {reinterpret_cast<const char*>(s.bytes.data()), s.bytes.size()};
}

}  // namespace

HookProcess::HookProcess(std::unique_ptr<ChildProcess> child, std::string source,
                         HookProcessOptions options)
    : child_(std::move(child)),
      output_(std::make_unique<OutputPipe>(child_->take_output_fd())),
      source_(std::move(source)),
      options_(std::move(options)) {}

HookProcess::~HookProcess() = default;

pid_t HookProcess::pid() const {
  return child_->pid();
}

Result<std::unique_ptr<HookProcess>> HookProcess::start(const std::string& library,
                                                        const std::string& source,
                                                        HookProcessOptions options) {
  auto child =
      ChildProcess::spawn({kHookHostCommand, library}, options.program, ChildOutput::kCaptured);
  if (!child.ok()) return child.status().with_context("cannot start the hook process");
  std::unique_ptr<HookProcess> hp(
      new HookProcess(std::move(child).value(), source, std::move(options)));
  // The library's static initialisers run before the first frame.
  const std::string loading = "loading " + source + " (its static initialisers)";
  std::string frame;
  LIZARD_RETURN_IF_ERROR(hp->await_reply({loading}, &frame));
  auto hooks = decode_ready(frame);
  if (!hooks.ok())
    return hp->fail(hooks.status().with_context(source + ": the hook process cannot load it"));
  hp->hooks_ = *hooks;
  return hp;
}

void HookProcess::kill() {
  if (failed_.ok()) failed_ = runtime_error("the hook process of " + source_ + " was stopped");
  child_->kill();
}

Status HookProcess::fail(Status st) {
  failed_ = st;
  child_->kill();
  return st;
}

std::string HookProcess::CallLabel::str() const {
  if (!text.empty()) return std::string(text);
  std::string out = std::string("host hook ") + hook_name(op);
  if (op != HookOp::kInit) out += " (iteration " + std::to_string(iteration) + ")";
  return out;
}

Status HookProcess::await_reply(const CallLabel& what, std::string* reply) {
  Status st = await_frame(what, reply);
  deliver_output(what);
  return st;
}

void HookProcess::deliver_output(const CallLabel& what) {
  OutputPipe::Taken printed = output_->take();
  if (printed.bytes.empty() && printed.dropped == 0) return;
  const bool in_iteration = what.text.empty() && what.op != HookOp::kInit;
  if (options_.output) return options_.output(in_iteration ? what.iteration : -1, printed);
  log_lines_of(printed.bytes,
               [&](std::string line) { spdlog::info("{} printed: {}", source_, line); });
}

Status HookProcess::await_frame(const CallLabel& what, std::string* reply) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.call_timeout_ms);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    int slice = static_cast<int>(std::max<int64_t>(0, left));
    if (options_.interrupted) slice = std::min(slice, kPollMs);
    const Status got = child_->receive_into(reply, slice);
    if (got.ok()) return got;
    if (got.code() == Code::kCancelled) {  // this slice ran out
      if (options_.interrupted) {
        Status st = options_.interrupted();
        if (!st.ok()) return fail(st);
      }
      if (Clock::now() < deadline) continue;
      std::string setting =
          options_.timeout_setting.empty() ? "" : " (" + options_.timeout_setting + ")";
      return fail(runtime_error(what.str() + " did not finish within " +
                                duration_text(options_.call_timeout_ms) + setting +
                                "; the hook process was killed"));
    }
    if (got.code() != Code::kUnavailable) return fail(got);
    // The process closed its end: it exited or was killed.
    if (!child_->wait_exit(kExitWaitMs))
      return fail(
          runtime_error(what.str() + " closed the hook process's channel; the process was killed"));
    return fail(
        runtime_error(what.str() + " ended the hook process: " + child_->exit_description()));
  }
}

Status HookProcess::send(const CallLabel& what, const std::string_view* parts, size_t count) {
  if (!failed_.ok()) return failed_;
  if (child_->channel().send_parts(parts, count).ok()) return Status::Ok();
  child_->wait_exit(kExitWaitMs);
  return fail(runtime_error("the hook process had ended before " + what.str() + ": " +
                            child_->exit_description()));
}

Status HookProcess::exchange(const CallLabel& what, const std::string_view* parts, size_t count,
                             std::string* reply) {
  LIZARD_RETURN_IF_ERROR(send(what, parts, count));
  return await_reply(what, reply);
}

Status HookProcess::finish_setup() {
  if (!setup_due_) return Status::Ok();
  setup_due_ = false;
  const std::string what = "setting up the hooks of " + source_;
  LIZARD_RETURN_IF_ERROR(await_reply({what}, &reply_));
  auto res = decode_result(reply_);
  if (!res.ok()) return fail(res.status().with_context(what));
  set_up_ = true;
  return Status::Ok();
}

Status HookProcess::setup(const Manifest& m, const ParamValues& p, const RunValues& values,
                          const SectionBuffer& state, const SectionBuffer& aggregate) {
  LIZARD_RETURN_IF_ERROR(finish_setup());  // an earlier run's, never awaited
  HookSetup s;
  s.values = values;
  const std::vector<uint8_t> params = pack_params(params_layout(m), p);
  s.params.assign(params.begin(), params.end());
  s.state = section_map(state_layout(m), state);
  s.aggregate = section_map(aggregate_layout(m), aggregate);
  const std::string frame = encode_setup(s);
  const std::string_view parts[] = {frame};
  const std::string what = "setting up the hooks of " + source_;
  LIZARD_RETURN_IF_ERROR(send({what}, parts, 1));
  setup_due_ = true;
  if (options_.setup_in_background) return Status::Ok();
  return finish_setup();
}

// Every iteration's update comes here: nothing is allocated unless it fails.
Result<int32_t> HookProcess::call(HookOp op, int64_t iteration, const SectionBuffer& first,
                                  const SectionBuffer* second, SectionBuffer* out) {
  const CallLabel what{{}, op, iteration};
  LIZARD_RETURN_IF_ERROR(finish_setup());
  if (!set_up_ && failed_.ok()) return internal_error(what.str() + " before the hooks were set up");
  encode_call_head(op, iteration, first.bytes.size(), &call_head_);
  const std::string_view parts[] = {call_head_, view(first),
                                    second ? view(*second) : std::string_view()};
  LIZARD_RETURN_IF_ERROR(exchange(what, parts, 3, &reply_));
  auto res = decode_result(reply_);
  if (!res.ok()) return fail(res.status().with_context(what.str()));
  if (res->section.size() != out->bytes.size())
    return fail(internal_error(what.str() + ": the hook process sent back " +
                               std::to_string(res->section.size()) + " bytes; expected " +
                               std::to_string(out->bytes.size())));
  if (!out->bytes.empty()) std::memcpy(out->bytes.data(), res->section.data(), out->bytes.size());
  return res->value;
}

Result<bool> HookProcess::init_state(SectionBuffer* state) {
  if (!hooks_.init) return false;
  LIZARD_ASSIGN_OR_RETURN(int32_t value, call(HookOp::kInit, 0, *state, nullptr, state));
  (void)value;
  return true;
}

Status HookProcess::aggregate(SectionBuffer* running, const SectionBuffer& partial,
                              int64_t iteration) {
  if (!hooks_.aggregate) return Status::Ok();
  return call(HookOp::kAggregate, iteration, *running, &partial, running).status();
}

Result<bool> HookProcess::update_state(const SectionBuffer& aggregate, SectionBuffer* state,
                                       int64_t iteration) {
  if (!hooks_.update) return true;
  LIZARD_ASSIGN_OR_RETURN(int32_t done, call(HookOp::kUpdate, iteration, aggregate, state, state));
  return done != 0;
}

}  // namespace lizard
