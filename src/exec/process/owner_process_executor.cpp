#include "exec/process/owner_process_executor.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace lizard {

OwnerProcessExecutor::OwnerProcessExecutor(std::unique_ptr<ProcessExecutor> first,
                                           size_t max_owners)
    : max_owners_(std::max<size_t>(max_owners, 1)),
      spec_(first->spec()),
      info_(first->info()),
      spare_(std::move(first)) {}

OwnerProcessExecutor::~OwnerProcessExecutor() {
  if (spare_starting_.valid()) spare_starting_.wait();
}

std::unique_ptr<ProcessExecutor> OwnerProcessExecutor::take_spare() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (spare_) return std::move(spare_);
  }
  if (!spare_starting_.valid()) return nullptr;
  auto started = spare_starting_.get();
  return started.ok() ? std::move(started).value() : nullptr;
}

void OwnerProcessExecutor::start_spare() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (spare_) return;
  }
  if (spare_starting_.valid()) return;
  spare_starting_ =
      std::async(std::launch::async, [spec = spec_] { return ProcessExecutor::start(spec); });
}

std::vector<std::unique_ptr<ProcessExecutor>> OwnerProcessExecutor::over_capacity() {
  std::vector<std::unique_ptr<ProcessExecutor>> ended;
  auto it = owned_.end();
  while (owned_.size() > max_owners_ && it != owned_.begin()) {
    --it;
    if (it == owned_.begin()) break;  // the one just asked for stays
    if (it->process->in_run()) continue;
    if (it->process.get() == current_) current_ = nullptr;
    ended.push_back(std::move(it->process));
    it = owned_.erase(it);
  }
  return ended;
}

Result<ProcessExecutor*> OwnerProcessExecutor::process_for(const std::string& owner) {
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = owned_.begin(); it != owned_.end(); ++it) {
      if (it->owner != owner) continue;
      owned_.splice(owned_.begin(), owned_, it);
      return owned_.front().process.get();
    }
  }
  std::unique_ptr<ProcessExecutor> process = take_spare();
  if (!process) {
    LIZARD_ASSIGN_OR_RETURN(process, ProcessExecutor::start(spec_));
  }
  if (Status st = process->serve_owner(owner); !st.ok()) {
    start_spare();
    return st;
  }
  ProcessExecutor* taken = process.get();
  std::vector<std::unique_ptr<ProcessExecutor>> ended;
  {
    std::lock_guard<std::mutex> l(mu_);
    owned_.push_front({owner, std::move(process)});
    ended = over_capacity();
  }
  ended.clear();  // each ends its process, outside mu_
  start_spare();
  return taken;
}

ProcessExecutor* OwnerProcessExecutor::any_process() const {
  std::lock_guard<std::mutex> l(mu_);
  if (current_) return current_;
  if (!owned_.empty()) return owned_.front().process.get();
  return spare_.get();
}

Status OwnerProcessExecutor::no_run() const {
  return not_found("no run on this executor");
}

Status OwnerProcessExecutor::build(const ProgramImage& program) {
  LIZARD_ASSIGN_OR_RETURN(ProcessExecutor * process, process_for(owner_of(program.hash)));
  return process->build(program);
}

Status OwnerProcessExecutor::begin_run(const ProgramImage& program, const ParamValues& params,
                                       PartitionData data) {
  {
    // A kill while the run's process is found or started is no other program's.
    std::lock_guard<std::mutex> l(mu_);
    current_ = nullptr;
  }
  LIZARD_ASSIGN_OR_RETURN(ProcessExecutor * process, process_for(owner_of(program.hash)));
  bool others = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    current_ = process;
    others = owned_.size() > 1 || spare_ != nullptr;
  }
  // A GPU run that does not fit beside the other programs' processes (their
  // contexts and kept rows) is tried once more without those that serve no
  // run; the rows are copied for that only where it can happen.
  std::optional<PartitionData> again;
  if (others && info_.kind == "cuda") again = data;
  Status st = process->begin_run(program, params, std::move(data));
  if (st.code() != Code::kTooLarge || !again || end_idle_others(process) == 0) return st;
  return process->begin_run(program, params, std::move(*again));
}

size_t OwnerProcessExecutor::end_idle_others(const ProcessExecutor* keep) {
  std::vector<std::unique_ptr<ProcessExecutor>> ended;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = owned_.begin(); it != owned_.end();) {
      if (it->process.get() == keep || it->process->in_run()) {
        ++it;
        continue;
      }
      ended.push_back(std::move(it->process));
      it = owned_.erase(it);
    }
    if (spare_) ended.push_back(std::move(spare_));
  }
  if (spare_starting_.valid()) {
    auto started = spare_starting_.get();
    if (started.ok()) ended.push_back(std::move(started).value());
  }
  return ended.size();
}

Status OwnerProcessExecutor::iterate(const SectionBuffer& state, int64_t iteration,
                                     SectionBuffer* aggregate, IterationStats* stats) {
  return current_ ? current_->iterate(state, iteration, aggregate, stats) : no_run();
}

Status OwnerProcessExecutor::iterate_rows(const SectionBuffer& state, int64_t iteration,
                                          SectionBuffer* aggregate, IterationStats* stats,
                                          int64_t first, int64_t count) {
  return current_ ? current_->iterate_rows(state, iteration, aggregate, stats, first, count)
                  : no_run();
}

Status OwnerProcessExecutor::send_iterate(const SectionBuffer& state, int64_t iteration,
                                          int64_t first, int64_t count) {
  return current_ ? current_->send_iterate(state, iteration, first, count) : no_run();
}

Status OwnerProcessExecutor::receive_iterate(SectionBuffer* aggregate, IterationStats* stats) {
  return current_ ? current_->receive_iterate(aggregate, stats) : no_run();
}

Result<std::vector<std::vector<uint8_t>>> OwnerProcessExecutor::end_run(bool want_outputs) {
  if (!current_) return no_run();
  return current_->end_run(want_outputs);
}

Result<OutputFieldBytes> OwnerProcessExecutor::end_run_in_place(bool want_outputs) {
  if (!current_) return no_run();
  return current_->end_run_in_place(want_outputs);
}

CompileStats OwnerProcessExecutor::run_compile_stats() const {
  return current_ ? current_->run_compile_stats() : CompileStats{};
}

void OwnerProcessExecutor::refresh_free_memory() {
  ProcessExecutor* process = any_process();
  if (!process) return;
  process->refresh_free_memory();
  info_.free_memory = process->info().free_memory;
}

void OwnerProcessExecutor::refresh_load() {
  ProcessExecutor* process = any_process();
  if (!process) return;
  process->refresh_load();
  info_.utilization = process->info().utilization;
  info_.launch_delay_us = process->info().launch_delay_us;
}

std::vector<std::string> OwnerProcessExecutor::kept_rows() const {
  std::lock_guard<std::mutex> l(mu_);
  std::set<std::string> keys;
  for (const Owned& o : owned_) {
    std::vector<std::string> kept = o.process->kept_rows();
    keys.insert(kept.begin(), kept.end());
  }
  return {keys.begin(), keys.end()};
}

std::vector<std::string> OwnerProcessExecutor::kept_rows_for(const std::string& owner) const {
  ProcessExecutor* process = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const Owned& o : owned_)
      if (o.owner == owner) process = o.process.get();
  }
  // A process that ended keeps nothing: its next run starts another.
  if (!process || !process->process_running()) return {};
  return process->kept_rows();
}

Status OwnerProcessExecutor::keep_file_rows(const std::string& key, const FileRows& where) {
  (void)key;
  (void)where;
  return Status(Code::kConflict,
                spec_.label + " keeps rows per program: name the program whose runs read them");
}

Status OwnerProcessExecutor::keep_file_rows_for(const std::string& owner, const std::string& key,
                                                const FileRows& where) {
  LIZARD_ASSIGN_OR_RETURN(ProcessExecutor * process, process_for(owner));
  return process->keep_file_rows(key, where);
}

void OwnerProcessExecutor::forget_kept_rows(const std::set<std::string>& keys) {
  std::vector<ProcessExecutor*> processes;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const Owned& o : owned_) processes.push_back(o.process.get());
  }
  for (ProcessExecutor* p : processes) {
    std::vector<std::string> kept = p->kept_rows();
    const bool keeps_any = std::any_of(kept.begin(), kept.end(),
                                       [&](const std::string& k) { return keys.count(k) > 0; });
    if (keeps_any) p->forget_kept_rows(keys);
  }
}

void OwnerProcessExecutor::forget_owner(const std::string& owner) {
  std::unique_ptr<ProcessExecutor> ended;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = owned_.begin(); it != owned_.end(); ++it) {
      if (it->owner != owner || it->process->in_run()) continue;
      if (it->process.get() == current_) current_ = nullptr;
      ended = std::move(it->process);
      owned_.erase(it);
      break;
    }
  }
}

std::vector<std::string> OwnerProcessExecutor::owners() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  for (const Owned& o : owned_) out.push_back(o.owner);
  return out;
}

OutputPipe::Taken OwnerProcessExecutor::take_output() {
  std::lock_guard<std::mutex> l(mu_);
  return current_ ? current_->take_output() : OutputPipe::Taken{};
}

void OwnerProcessExecutor::kill_process() {
  std::lock_guard<std::mutex> l(mu_);
  if (current_) current_->kill_process();
}

Status OwnerProcessExecutor::restart_if_ended() {
  return current_ ? current_->restart_if_ended() : Status::Ok();
}

bool OwnerProcessExecutor::process_running() {
  return current_ ? current_->process_running() : true;
}

pid_t OwnerProcessExecutor::pid() const {
  std::lock_guard<std::mutex> l(mu_);
  return current_ ? current_->pid() : -1;
}

}  // namespace lizard
