#include "exec/process/process_executor.h"

#include <signal.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "common/lent_memory.h"
#include "common/sealed_memory.h"

namespace lizard {

namespace {

// How long a new process may take to create its executor (a GPU's context).
constexpr int kStartTimeoutMs = 120000;

}  // namespace

Result<std::unique_ptr<ProcessExecutor>> ProcessExecutor::start(ExecutorProcessSpec spec) {
  std::unique_ptr<ProcessExecutor> e(new ProcessExecutor(std::move(spec)));
  LIZARD_RETURN_IF_ERROR(e->spawn());
  return e;
}

ProcessExecutor::~ProcessExecutor() {
  std::lock_guard<std::mutex> l(pid_mu_);
  pid_ = -1;
}

pid_t ProcessExecutor::pid() const {
  std::lock_guard<std::mutex> l(pid_mu_);
  return pid_;
}

Status ProcessExecutor::spawn() {
  LIZARD_ASSIGN_OR_RETURN(child_,
                          ChildProcess::spawn(spec_.args, spec_.program, ChildOutput::kCaptured));
  auto output = std::make_shared<OutputPipe>(child_->take_output_fd());
  {
    std::lock_guard<std::mutex> l(pid_mu_);
    pid_ = child_->pid();
    output_.swap(output);
  }
  programs_sent_.clear();
  kept_rows_.clear();
  loans_ = std::make_shared<GivenBackLoans>();  // the last process's loans end with it
  in_run_ = false;
  const char op = static_cast<char>(ExecutorOp::kInfo);
  std::string frame;
  Status st = child_->channel().send(std::string_view(&op, 1));
  if (st.ok()) {
    auto r = child_->channel().receive(kStartTimeoutMs);
    st = r.status();
    if (st.ok()) frame = std::move(r).value();
  }
  if (!st.ok()) {
    Status ended = ended_during(ExecutorOp::kInfo);
    return st.code() == Code::kCancelled
               ? unavailable("the executor process for " + spec_.label + " did not start in " +
                             std::to_string(kStartTimeoutMs / 1000) + " s")
               : ended;
  }
  ByteReader r(frame);
  bool lost = false;
  st = read_reply_head(&r, &lost);
  std::string info = r.str();
  if (st.ok()) st = r.status("info");
  if (st.ok()) {
    auto j = nlohmann::json::parse(info, nullptr, false);
    if (j.is_discarded()) st = internal_error("the executor process sent an unreadable info");
    if (st.ok()) info_ = ExecutorInfo::from_json(j);
  }
  if (!st.ok()) {
    {
      std::lock_guard<std::mutex> l(pid_mu_);
      pid_ = -1;
    }
    child_->kill();
    child_.reset();
    last_end_ = "it could not create its executor";
    return st;
  }
  return owner_.empty() ? st : send_owner();
}

Status ProcessExecutor::serve_owner(const std::string& owner) {
  owner_ = owner;
  if (!child_) return Status::Ok();  // told when the next process starts
  return send_owner();
}

Status ProcessExecutor::send_owner() {
  ByteWriter w;
  w.bytes(owner_);
  std::string_view part = w.out();
  std::string frame;
  LIZARD_RETURN_IF_ERROR(call(ExecutorOp::kServeOwner, &part, 1, &frame));
  ByteReader r(frame);
  bool lost = false;
  Status st = read_reply_head(&r, &lost);
  if (!st.ok()) {  // a process that serves anyone else runs none of this owner's code
    kill_process();
    reap();
    last_end_ = "it could not serve one owner: " + st.message();
  }
  return st;
}

Status ProcessExecutor::restart_if_ended() {
  if (process_running()) return Status::Ok();
  return spawn();
}

bool ProcessExecutor::process_running() {
  if (!child_) return false;
  siginfo_t info{};
  // WNOWAIT: only looks, so that the pid stays ours until reap() says so.
  if (::waitid(P_PID, static_cast<id_t>(child_->pid()), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == 0)
    return true;
  reap();
  return false;
}

OutputPipe::Taken ProcessExecutor::take_output() {
  std::shared_ptr<OutputPipe> output;
  {
    std::lock_guard<std::mutex> l(pid_mu_);
    output = output_;
  }
  return output ? output->take() : OutputPipe::Taken{};
}

void ProcessExecutor::kill_process() {
  std::lock_guard<std::mutex> l(pid_mu_);
  if (pid_ > 0) ::kill(pid_, SIGKILL);
}

// The process's end of the channel closed: it has exited or been killed.
// Reaps it and says how it ended.
void ProcessExecutor::reap() {
  {
    std::lock_guard<std::mutex> l(pid_mu_);
    pid_ = -1;  // from here on the pid may be reaped and reused: no more kills
  }
  if (!child_->wait_exit(2000)) child_->kill();
  last_end_ = child_->exit_description();
  child_.reset();
  programs_sent_.clear();
  kept_rows_.clear();
  in_run_ = false;
}

void ProcessExecutor::end_lost_process() {
  kill_process();
  reap();
  last_end_ = "its device was lost";
}

Status ProcessExecutor::ended_during(ExecutorOp op) {
  reap();
  return runtime_error("the executor process for " + spec_.label + " ended during " +
                       executor_op_name(op) + ": " + last_end_);
}

Status ProcessExecutor::no_process(ExecutorOp op) const {
  return runtime_error("the executor process for " + spec_.label + " ended before " +
                       executor_op_name(op) +
                       (last_end_.empty() ? std::string() : " (" + last_end_ + ")"));
}

Status ProcessExecutor::send_request(ExecutorOp op, const std::string_view* parts, size_t count,
                                     const std::vector<OwnedFd>& files) {
  if (!child_) return no_process(op);
  const char code = static_cast<char>(op);
  // The op's byte before the parts: on the stack for the calls of every
  // iteration, which have few parts.
  constexpr size_t kFew = 8;
  std::string_view few[kFew];
  std::vector<std::string_view> many;
  std::string_view* all = few;
  if (count + 1 > kFew) {
    many.resize(count + 1);
    all = many.data();
  }
  all[0] = std::string_view(&code, 1);
  std::copy(parts, parts + count, all + 1);
  if (files.empty()) {
    if (!child_->channel().send_parts(all, count + 1).ok()) return ended_during(op);
    return Status::Ok();
  }
  std::vector<int> fds;
  for (const OwnedFd& f : files) fds.push_back(f.get());
  Status st = child_->channel().send_with_descriptors(all, count + 1, fds.data(), fds.size());
  if (st.code() == Code::kInvalidArgument) return st;  // too many: nothing was sent
  if (!st.ok()) return ended_during(op);
  return Status::Ok();
}

// Waits for the reply to the request sent last, into *frame (its capacity reused).
Status ProcessExecutor::receive_reply(ExecutorOp op, std::string* frame) {
  if (!child_) return no_process(op);
  if (!child_->receive_into(frame, -1).ok()) return ended_during(op);
  return Status::Ok();
}

Status ProcessExecutor::call(ExecutorOp op, const std::string_view* parts, size_t count,
                             std::string* frame) {
  LIZARD_RETURN_IF_ERROR(send_request(op, parts, count));
  return receive_reply(op, frame);
}

namespace {

// Reads a reply's head; a lost device ends the process (the next call
// starts another), keeping the call's own error.
struct Reply {
  explicit Reply(const std::string& frame) : reader(frame) {}
  ByteReader reader;
  bool lost = false;
  Status head() { return read_reply_head(&reader, &lost); }
};

}  // namespace

Status ProcessExecutor::build(const ProgramImage& program) {
  LIZARD_RETURN_IF_ERROR(restart_if_ended());
  ByteWriter w;
  write_program(&w, program);
  std::string_view part = w.out();
  std::string frame;
  LIZARD_RETURN_IF_ERROR(call(ExecutorOp::kBuild, &part, 1, &frame));
  Reply reply(frame);
  Status st = reply.head();
  if (st.ok()) programs_sent_.insert(program.hash);
  if (reply.lost) end_lost_process();
  return st;
}

Status ProcessExecutor::begin_run(const ProgramImage& program, const ParamValues& params,
                                  PartitionData data) {
  LIZARD_RETURN_IF_ERROR(restart_if_ended());
  bool rows_missing = false;
  Status st = send_begin_run(program, params, data, true, &rows_missing);
  // The process no longer keeps rows it was to take by key: send them.
  if (rows_missing) st = send_begin_run(program, params, data, false, &rows_missing);
  return st;
}

Status ProcessExecutor::send_begin_run(const ProgramImage& program, const ParamValues& params,
                                       const PartitionData& data, bool name_kept,
                                       bool* rows_missing) {
  compile_stats_ = CompileStats{};
  ByteWriter w;
  const bool send_program = programs_sent_.count(program.hash) == 0;
  w.u8(send_program ? 1 : 0);
  if (send_program)
    write_program(&w, program);
  else
    w.bytes(program.hash);
  write_params(&w, params);
  std::vector<FieldRowsHead> heads(data.fields.size());
  std::vector<OwnedFd> files;  // opened here: the process's sandbox may not open them
  for (size_t k = 0; k < heads.size(); ++k) {
    heads[k].key = data.row_key(k);
    const size_t size = data.field_size(k);
    if (name_kept && size > 0 && kept_rows_.count(heads[k].key)) {
      heads[k].how = FieldRows::kKept;
      heads[k].size = size;
    } else if (data.from_file(k)) {  // the process reads them itself
      heads[k].how = FieldRows::kFile;
      heads[k].file = data.file_rows[k];
      LIZARD_ASSIGN_OR_RETURN(OwnedFd f, open_for_reading(data.file_rows[k]));
      files.push_back(std::move(f));
    } else if (data.named_only(k)) {  // rows named by key alone that it no longer keeps
      return Status(Code::kNotFound,
                    "executor " + spec_.label + " no longer keeps the rows " + heads[k].key);
    }
  }
  write_partition_head(&w, data, heads);
  std::string_view head = w.out();
  LIZARD_RETURN_IF_ERROR(send_request(ExecutorOp::kBeginRun, &head, 1, files));
  // Each field's rows not named by key as a frame of their own, sent from
  // where they lie and read straight into the host's buffer.
  for (size_t k = 0; k < data.fields.size(); ++k) {
    if (heads[k].how != FieldRows::kSent) continue;
    if (!child_->channel().send(data.field_rows(k)).ok())
      return ended_during(ExecutorOp::kBeginRun);
  }
  std::string frame;
  LIZARD_RETURN_IF_ERROR(receive_reply(ExecutorOp::kBeginRun, &frame));
  Reply reply(frame);
  Status st = reply.head();
  BeginRunReply r = read_begin_run_reply(&reply.reader);
  const Status parsed = reply.reader.status("begin_run");
  if (st.ok()) st = parsed;
  if (parsed.ok()) {
    compile_stats_ = r.compile;
    kept_rows_ = std::set<std::string>(r.kept.begin(), r.kept.end());
  }
  *rows_missing = parsed.ok() && r.rows_missing;
  if (st.ok()) programs_sent_.insert(program.hash);
  in_run_ = st.ok();
  iterated_ = false;
  if (reply.lost) end_lost_process();
  return st;
}

Status ProcessExecutor::send_iterate(const SectionBuffer& state, int64_t iteration, int64_t first,
                                     int64_t count) {
  if (!child_) return no_process(ExecutorOp::kIterate);
  if (!in_run_) return not_found("no run on this executor");
  char head[24];  // the iteration, first and count, as ByteWriter lays them out
  ByteWriter::put_u64(static_cast<uint64_t>(iteration), head);
  ByteWriter::put_u64(static_cast<uint64_t>(first), head + 8);
  ByteWriter::put_u64(static_cast<uint64_t>(count), head + 16);
  std::string_view parts[] = {
      {head, sizeof head}, {reinterpret_cast<const char*>(state.bytes.data()), state.bytes.size()}};
  // The run's first reply has no cadence to set how long to poll for it.
  if (!iterated_) child_->channel().expect_frame_soon();
  iterated_ = true;
  return send_request(ExecutorOp::kIterate, parts, 2);
}

Status ProcessExecutor::receive_iterate(SectionBuffer* aggregate, IterationStats* stats) {
  LIZARD_RETURN_IF_ERROR(receive_reply(ExecutorOp::kIterate, &iterate_reply_));
  Reply reply(iterate_reply_);
  Status st = reply.head();
  stats->kernel_ms = reply.reader.f64();
  stats->total_ms = reply.reader.f64();
  stats->switched_build = reply.reader.u8() != 0;
  std::string_view agg = reply.reader.bytes();
  if (st.ok()) st = reply.reader.status("iterate");
  if (st.ok() && agg.size() != aggregate->bytes.size())
    st = internal_error("the executor process sent an aggregate of " + std::to_string(agg.size()) +
                        " bytes; expected " + std::to_string(aggregate->bytes.size()));
  if (st.ok() && !agg.empty()) std::memcpy(aggregate->bytes.data(), agg.data(), agg.size());
  if (reply.lost) end_lost_process();
  return st;
}

Status ProcessExecutor::iterate(const SectionBuffer& state, int64_t iteration,
                                SectionBuffer* aggregate, IterationStats* stats) {
  LIZARD_RETURN_IF_ERROR(send_iterate(state, iteration, 0, -1));
  return receive_iterate(aggregate, stats);
}

Status ProcessExecutor::iterate_rows(const SectionBuffer& state, int64_t iteration,
                                     SectionBuffer* aggregate, IterationStats* stats, int64_t first,
                                     int64_t count) {
  LIZARD_RETURN_IF_ERROR(send_iterate(state, iteration, first, count));
  return receive_iterate(aggregate, stats);
}

Result<std::vector<std::vector<uint8_t>>> ProcessExecutor::end_run(bool want_outputs) {
  LIZARD_ASSIGN_OR_RETURN(OutputFieldBytes got, end_run_in_place(want_outputs));
  std::vector<std::vector<uint8_t>> fields;
  for (std::string_view f : got.fields) fields.emplace_back(f.begin(), f.end());
  return fields;
}

Result<OutputFieldBytes> ProcessExecutor::end_run_in_place(bool want_outputs) {
  in_run_ = false;
  if (!child_) {  // the rows went with the process
    if (want_outputs) return no_process(ExecutorOp::kEndRun);
    return OutputFieldBytes{};
  }
  ByteWriter w;
  w.u8(want_outputs ? 1 : 0);
  write_loans(&w, loans_->take());
  std::string_view part = w.out();
  auto frame = std::make_shared<std::string>();
  LIZARD_RETURN_IF_ERROR(call(ExecutorOp::kEndRun, &part, 1, frame.get()));
  OwnedFd fd = child_->channel().take_descriptor();
  Reply reply(*frame);
  Status st = reply.head();
  const uint64_t n = reply.reader.u64();
  std::vector<uint64_t> sizes;
  uint64_t total = 0;
  for (uint64_t i = 0; i < n && reply.reader.ok(); ++i) {
    sizes.push_back(reply.reader.u64());
    total += sizes.back();
  }
  const auto in = static_cast<OutputsIn>(reply.reader.u8());
  const uint64_t loan = in == OutputsIn::kLentFile ? reply.reader.u64() : 0;
  std::string_view rest = reply.reader.rest();
  if (st.ok()) st = reply.reader.status("end_run");
  OutputFieldBytes out;
  out.owner = frame;
  // The bytes may be in the memory file that came with the reply.  A lent
  // one goes back to the process that lent it once they have been sent on.
  auto take = [&](auto mapped) {
    if (!mapped.ok()) {
      st = mapped.status().with_context("the executor process's outputs");
      return;
    }
    rest = (*mapped)->bytes();
    out.owner = std::move(mapped).value();
  };
  if (st.ok() && in == OutputsIn::kSealedFile)
    take(MappedSealedMemory::map(std::move(fd), total));
  else if (st.ok() && in == OutputsIn::kLentFile)
    take(BorrowedMemory::map(std::move(fd), total,
                             [loans = loans_, loan] { loans->give_back(loan); }));
  size_t off = 0;
  for (uint64_t s : sizes) {
    if (!st.ok()) break;
    if (s > rest.size() - off) {
      st = internal_error("the executor process sent fewer output bytes than it announced");
      break;
    }
    out.fields.push_back(rest.substr(off, s));
    off += s;
  }
  if (reply.lost) end_lost_process();
  if (!st.ok()) return st;
  return out;
}

void ProcessExecutor::refresh_free_memory() {
  if (!restart_if_ended().ok()) return;
  std::string frame;
  if (!call(ExecutorOp::kRefreshFreeMemory, nullptr, 0, &frame).ok()) return;
  Reply reply(frame);
  Status st = reply.head();
  const uint64_t free_memory = reply.reader.u64();
  if (st.ok() && reply.reader.ok()) info_.free_memory = free_memory;
  if (reply.lost) end_lost_process();
}

void ProcessExecutor::refresh_load() {
  if (!restart_if_ended().ok()) return;
  std::string frame;
  if (!call(ExecutorOp::kRefreshLoad, nullptr, 0, &frame).ok()) return;
  Reply reply(frame);
  Status st = reply.head();
  const double utilization = reply.reader.f64();
  const double delay = reply.reader.f64();
  if (st.ok() && reply.reader.ok()) {
    info_.utilization = utilization;
    info_.launch_delay_us = delay;
  }
  if (reply.lost) end_lost_process();
}

Status ProcessExecutor::call_for_kept_rows(ExecutorOp op, std::string_view request,
                                           const std::vector<OwnedFd>& files) {
  LIZARD_RETURN_IF_ERROR(restart_if_ended());
  if (in_run_)
    return Status(Code::kConflict, spec_.label + " serves a run; rows are kept between runs");
  std::string frame;
  LIZARD_RETURN_IF_ERROR(send_request(op, &request, 1, files));
  LIZARD_RETURN_IF_ERROR(receive_reply(op, &frame));
  Reply reply(frame);
  Status st = reply.head();
  std::vector<std::string> kept = read_keys(&reply.reader);
  if (reply.reader.ok()) kept_rows_ = std::set<std::string>(kept.begin(), kept.end());
  if (reply.lost) end_lost_process();
  return st;
}

Status ProcessExecutor::keep_file_rows(const std::string& key, const FileRows& where) {
  ByteWriter w;
  w.bytes(key);
  write_file_rows(&w, where);
  std::vector<OwnedFd> file;
  LIZARD_ASSIGN_OR_RETURN(OwnedFd f, open_for_reading(where));
  file.push_back(std::move(f));
  return call_for_kept_rows(ExecutorOp::kKeepFileRows, w.out(), file);
}

void ProcessExecutor::forget_kept_rows(const std::set<std::string>& keys) {
  ByteWriter w;
  write_keys(&w, {keys.begin(), keys.end()});
  (void)call_for_kept_rows(ExecutorOp::kForgetKeptRows, w.out());
}

}  // namespace lizard
