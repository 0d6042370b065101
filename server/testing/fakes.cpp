#include "server/testing/fakes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "exec/host_compiler.h"
#include "program/bundle.h"

namespace lizard::testing {

namespace fs = std::filesystem;

std::shared_ptr<ProgramEntry> make_test_program(const std::string& config,
                                                const std::string& host_cpp) {
  static const HostCompiler compiler(
      (fs::temp_directory_path() / ("lizard-test-hooks-" + std::to_string(getuid()))).string());
  ProgramBundle b;
  b.config = config;
  b.sources["kernel.cu"] = "";
  if (!host_cpp.empty()) b.sources["host.cpp"] = host_cpp;
  ProgramRegistry prep("", &compiler);
  auto entry = prep.prepare(b.to_json());
  EXPECT_TRUE(entry.ok()) << entry.status().message();
  return entry.ok() ? std::move(entry).value() : nullptr;
}

// ---- FakeWorkerLink ---------------------------------------------------------

void FakeWorkerLink::send(OutgoingFrame frame) {
  std::string whole = std::move(frame.head);
  whole.append(frame.tail.data(), frame.tail.size());
  for (std::string_view t : frame.more_tails) whole.append(t.data(), t.size());
  std::function<void(const std::string&)> hook, watch;
  {
    std::lock_guard<std::mutex> l(mu_);
    frames_.push_back(whole);
    hook = on_send_;
    watch = watch_;
  }
  cv_.notify_all();
  if (watch) watch(whole);
  if (hook) hook(whole);
}

size_t FakeWorkerLink::queued_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return queued_;
}

void FakeWorkerLink::close() {
  std::lock_guard<std::mutex> l(mu_);
  closed_ = true;
}

void FakeWorkerLink::on_send(std::function<void(const std::string&)> f) {
  std::lock_guard<std::mutex> l(mu_);
  on_send_ = std::move(f);
}

void FakeWorkerLink::watch(std::function<void(const std::string&)> f) {
  std::lock_guard<std::mutex> l(mu_);
  watch_ = std::move(f);
}

void FakeWorkerLink::set_queued_bytes(size_t n) {
  std::lock_guard<std::mutex> l(mu_);
  queued_ = n;
}

std::vector<Message> FakeWorkerLink::sent() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Message> out;
  for (const auto& f : frames_) {
    auto m = decode(f);
    EXPECT_TRUE(m.ok()) << m.status().message();
    if (m.ok()) out.push_back(std::move(m).value());
  }
  return out;
}

std::vector<Message> FakeWorkerLink::sent_of(MessageType t) const {
  std::vector<Message> out;
  for (auto& m : sent())
    if (m.type == t) out.push_back(std::move(m));
  return out;
}

size_t FakeWorkerLink::frames() const {
  std::lock_guard<std::mutex> l(mu_);
  return frames_.size();
}

bool FakeWorkerLink::closed() const {
  std::lock_guard<std::mutex> l(mu_);
  return closed_;
}

bool FakeWorkerLink::wait_for(MessageType t, size_t count,
                              std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_for(l, timeout, [&] {
    size_t n = 0;
    for (const auto& f : frames_) {
      auto m = decode_view(f);
      n += m.ok() && m->type == t;
    }
    return n >= count;
  });
}

// ---- FakeWorker -------------------------------------------------------------

FakeWorker::FakeWorker(std::string id, Deliver deliver)
    : id_(std::move(id)), deliver_(std::move(deliver)), link_(std::make_shared<FakeWorkerLink>()) {
  link_->on_send([this](const std::string& frame) {
    {
      std::lock_guard<std::mutex> l(mu_);
      ++received_;
    }
    inbox_.push(frame);
  });
  thread_ = std::thread([this] {
    while (auto frame = inbox_.pop()) {
      handle(*frame);
      {
        std::lock_guard<std::mutex> l(mu_);
        ++handled_;
      }
      idle_.notify_all();
    }
  });
}

FakeWorker::~FakeWorker() {
  link_->on_send(nullptr);
  inbox_.close();
  thread_.join();
}

HelloMsg FakeWorker::hello(size_t executors, uint64_t free_bytes) const {
  HelloMsg h;
  h.hostname = "fake-" + id_;
  h.version = "test";
  h.backend = "cpu";
  h.cpu.model = "fake";
  h.cpu.threads = 1;
  for (size_t i = 0; i < executors; ++i) {
    ExecutorInfo e;
    e.kind = "cpu";
    e.name = "fake executor";
    e.ordinal = static_cast<int>(i);
    e.total_memory = free_bytes;
    e.free_memory = free_bytes;
    h.executors.push_back(e);
  }
  return h;
}

void FakeWorker::go_silent() {
  std::lock_guard<std::mutex> l(mu_);
  silent_ = true;
}

void FakeWorker::drain() {
  std::unique_lock<std::mutex> l(mu_);
  idle_.wait_for(l, std::chrono::seconds(10), [&] { return handled_ >= received_; });
}

void FakeWorker::answer(Message m) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (silent_) return;
  }
  deliver_(id_, std::move(m));
}

void FakeWorker::drive_loop(const Message& m) {
  auto l = LoopMsg::parse(m.header);
  if (!l.ok()) return;
  auto run = runs_.find(l->run_id);
  LoopStepMsg step;
  step.run_id = l->run_id;
  step.iteration = l->first_iteration;
  if (run == runs_.end() || !loop_step) {
    step.ok = false;
    step.unsupported = run != runs_.end();
    step.error = run == runs_.end() ? "no such run on this worker" : "no hooks on this worker";
    return answer(step.to_message());
  }
  std::string state = m.payload;
  for (int64_t it = l->first_iteration; it < l->max_iterations; ++it) {
    step.iteration = it;
    step.kernel_ms = 2.0;
    step.ms = 3.0;
    step.fold_ms = 0.5;
    step.quick_build = it < quick_iterations;
    std::string payload = loop_step(run->second, state, it, &step.last);
    step.last = step.last || it + 1 >= l->max_iterations;
    if (payload.size() >= state.size()) state = payload.substr(payload.size() - state.size());
    answer(step.to_message(std::move(payload)));
    if (step.last) return;
  }
}

void FakeWorker::handle(const std::string& frame) {
  auto decoded = decode(frame);
  if (!decoded.ok()) return;
  const Message& m = decoded.value();
  if (intercept && intercept(m)) return;
  switch (m.type) {
    case MessageType::kProgram: {
      auto p = ProgramMsg::parse(m.header);
      return answer(
          ProgramStatusMsg{p.ok() ? p->hash : "", builds, builds ? "" : build_error}.to_message());
    }
    case MessageType::kDataChunk: {
      auto c = DataChunkMsg::parse(m.header);
      if (!c.ok()) return;
      std::string& rows = chunks_[c->run_id][c->field];
      if (rows.size() < c->total) rows.resize(c->total);
      rows.replace(c->offset, m.payload.size(), m.payload);
      return;
    }
    case MessageType::kRunStart: {
      auto s = RunStartMsg::parse(m.header);
      if (!s.ok()) return;
      FakeRun run;
      run.start = s.value();
      RunReadyMsg ready{s->run_id, true, "", 1.5, false, {}};
      for (size_t k = 0; k < s->fields.size(); ++k) {
        const FieldSource& f = s->fields[k];
        // Uploaded rows are kept by upload and rows, as a worker's cache keeps them.
        const std::string key =
            f.upload + ":" + std::to_string(s->first_row) + "+" + std::to_string(s->rows);
        const RowDelivery how = f.delivery;
        if (how == RowDelivery::kRows) run.rows[f.name] = m.payload.substr(f.offset, f.bytes);
        if (how == RowDelivery::kChunks) run.rows[f.name] = chunks_[s->run_id][k];
        if (how == RowDelivery::kChunks && !f.upload.empty()) cached_[key] = run.rows[f.name];
        if (how == RowDelivery::kCached && cached_.count(key)) run.rows[f.name] = cached_[key];
        if (how == RowDelivery::kCached && !cached_.count(key))
          ready.missing.push_back(static_cast<int64_t>(k));
      }
      chunks_.erase(s->run_id);
      if (!ready.missing.empty()) {
        ready.ok = false;
        ready.error = "rows no longer cached";
        return answer(ready.to_message());
      }
      runs_[s->run_id] = std::move(run);
      return answer(ready.to_message());
    }
    case MessageType::kIterate: {
      auto it = IterateMsg::parse(m.packed);
      if (!it.ok()) return;
      auto run = runs_.find(it->run_id);
      IterationResultMsg r{it->run_id, it->iteration, run != runs_.end(), "", 2.0};
      r.quick_build = it->iteration < quick_iterations;
      if (run == runs_.end()) r.error = "no such run on this worker";
      std::string payload = r.ok && kernel ? kernel(run->second, it.value()) : std::string();
      return answer(r.to_message(std::move(payload)));
    }
    case MessageType::kLoop:
      return drive_loop(m);
    case MessageType::kRunEnd: {
      auto e = RunEndMsg::parse(m.header);
      if (!e.ok()) return;
      auto run = runs_.find(e->run_id);
      RunOutputsMsg out{e->run_id, run != runs_.end(), "", {}};
      std::string payload;
      if (run != runs_.end())
        for (const auto& name : e->outputs) {
          std::string bytes = output ? output(run->second, name) : std::string();
          out.fields.push_back({name, bytes.size()});
          payload += bytes;
        }
      else
        out.error = "no such run on this worker";
      if (run != runs_.end()) runs_.erase(run);
      if (e->want_outputs) answer(out.to_message(std::move(payload)));
      return;
    }
    default:
      return;
  }
}

}  // namespace lizard::testing
