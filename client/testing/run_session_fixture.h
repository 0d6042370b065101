// RunSessionTest: a worker's two fake executors (FakeExecutor sums x and
// returns y = 2x), the program they have built, and what its sessions send,
// for the RunSession tests (run_session_test.cpp, run_session_loop_test.cpp).
//
//   TEST_F(RunSessionTest, ...) { auto s = session(); s->post(run_start("r1.0", 5)); ... }
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "client/run_session.h"
#include "common/clock.h"
#include "dataset/dataset_source_registry.h"
#include "dataset/test_files.h"
#include "program/bundle.h"

namespace lizard::testing {

using nlohmann::json;

inline const char* kConfig = R"(
sources: {cuda: kernel.cu}
dataset:
  x: {type: float64, shape: [rows]}
  y: {type: float64, shape: [rows], input: false, output: true}
state: {t: {type: float64}}
aggregate:
  sum:   {type: float64, reduce: sum}
  count: {type: int64, reduce: sum}
iterate: [k]
)";

inline std::shared_ptr<const ProgramImage> program() {
  ProgramBundle b;
  b.config = kConfig;
  b.sources["kernel.cu"] = "";
  auto img = make_program_image(b);
  EXPECT_TRUE(img.ok()) << img.status().message();
  return std::make_shared<ProgramImage>(std::move(img).value());
}

// A frame as the wire carries it: its head, then its tail.
inline std::string whole(OutgoingFrame f) {
  std::string frame = std::move(f.head);
  frame.append(f.tail.data(), f.tail.size());
  for (std::string_view t : f.more_tails) frame.append(t.data(), t.size());
  return frame;
}

inline std::vector<double> as_doubles(const void* p, size_t bytes) {
  std::vector<double> v(bytes / sizeof(double));
  std::memcpy(v.data(), p, v.size() * sizeof(double));
  return v;
}

// An executor that keeps the x rows it is given, sums them (plus the state's
// t per row) into the aggregate and returns y = 2x.  Counts what it is asked.
class FakeExecutor : public Executor {
 public:
  explicit FakeExecutor(int ordinal) {
    info_.ordinal = ordinal;
    iterations.reserve(1 << 16);  // an iteration allocates nothing
  }
  const ExecutorInfo& info() const override { return info_; }
  Status build(const ProgramImage&) override { return Status::Ok(); }
  Status begin_run(const ProgramImage& p, const ParamValues&, PartitionData data) override {
    ++begun;
    if (!fail_begin.empty()) return runtime_error(fail_begin);
    // Rows from a file, read as a host-memory executor reads them.
    LIZARD_RETURN_IF_ERROR(read_file_fields(&data, 1));
    manifest_ = p.manifest;
    first_row = data.first_row;
    x = as_doubles(data.fields[0].data(), data.fields[0].size());
    EXPECT_TRUE(data.fields[1].empty());  // input: false, allocated here
    return Status::Ok();
  }
  Status iterate(const SectionBuffer& state, int64_t iteration, SectionBuffer* agg,
                 IterationStats* stats) override {
    return iterate_rows(state, iteration, agg, stats, 0, static_cast<int64_t>(x.size()));
  }
  Status iterate_rows(const SectionBuffer& state, int64_t iteration, SectionBuffer* agg,
                      IterationStats* stats, int64_t first, int64_t count) override {
    iterations.push_back(iteration);
    if (!fail_iterate.empty()) return runtime_error(fail_iterate);
    ++slices;
    double t = 0;
    std::memcpy(&t, state.data(*state.find("t")), sizeof t);
    double sum = 0;
    for (int64_t i = first; i < first + count; ++i) sum += x[static_cast<size_t>(i)] + t;
    std::memcpy(agg->data(*agg->find("sum")), &sum, sizeof sum);
    std::memcpy(agg->data(*agg->find("count")), &count, sizeof count);
    stats->kernel_ms = 1.0 + info_.ordinal;
    // A run begun on a quick build switches at iteration quick_until.
    stats->switched_build = quick_until >= 0 && iteration == quick_until && first == 0;
    return Status::Ok();
  }
  Result<std::vector<std::vector<uint8_t>>> end_run(bool want_outputs) override {
    ++ended;
    ended_wanting += want_outputs;
    std::vector<std::vector<uint8_t>> out(2);
    if (want_outputs)
      for (double v : x) {
        const double y = 2 * v;
        const auto* b = reinterpret_cast<const uint8_t*>(&y);
        out[1].insert(out[1].end(), b, b + sizeof y);
      }
    return out;
  }
  CompileStats run_compile_stats() const override {
    return {4.0 + info_.ordinal, false, quick_until >= 0};
  }
  void refresh_free_memory() override {}

  std::atomic<int> begun{0}, ended{0}, ended_wanting{0}, slices{0};
  int64_t first_row = -1;
  std::vector<int64_t> iterations;  // the iteration of each call, in order
  std::vector<double> x;
  std::string fail_begin, fail_iterate;
  int64_t quick_until = -1;  // >= 0: runs begin on a quick build and switch there

 private:
  ExecutorInfo info_;
  Manifest manifest_;
};

// A worker's executors, the program it has built, and what its sessions send.
class RunSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    program_ = program();
    for (int i = 0; i < 2; ++i) {
      executors_.push_back(std::make_unique<ExecutorHandle>());
      executors_.back()->executor = std::make_unique<FakeExecutor>(i);
    }
  }

  FakeExecutor& exec(size_t i) { return static_cast<FakeExecutor&>(*executors_[i]->executor); }

  std::unique_ptr<RunSession> session(std::map<size_t, std::shared_ptr<UploadRows>> uploaded = {},
                                      OpenLoopHooks open_hooks = nullptr,
                                      const DataRoots* roots = nullptr) {
    SessionContext ctx = context(std::move(open_hooks));
    ctx.data_roots = roots;
    return std::make_unique<RunSession>(std::move(ctx), std::move(uploaded));
  }

  // A session's context: these executors and program; replies go to replies_.
  SessionContext context(OpenLoopHooks open_hooks = nullptr) {
    SessionContext ctx;
    ctx.open_hooks = std::move(open_hooks);
    ctx.executors = &executors_;
    ctx.send = [this](OutgoingFrame frame) { replies_.push(whole(std::move(frame))); };
    ctx.find_program = [this](const std::string& hash) -> std::shared_ptr<const ProgramImage> {
      return hash == program_->hash ? program_ : nullptr;
    };
    return ctx;
  }

  // x = 1..rows as rows, split over the given executors.
  std::string run_start(const std::string& run_id, int64_t rows, std::vector<PartSpec> parts = {},
                        bool progress = false, uint64_t run_seed = 0) {
    if (parts.empty()) parts = {{0, 0, rows}};
    RunStartMsg s;
    s.run_id = run_id;
    s.run_seed = run_seed;
    s.hash = program_->hash;
    s.rows = rows;
    s.parts = parts;
    s.progress = progress;
    std::string payload;
    for (int64_t i = 1; i <= rows; ++i) {
      const double v = static_cast<double>(i);
      payload.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    const auto& sources = DatasetSourceRegistry::global();
    s.fields = {sources.field("x", "inline"), sources.field("y", "none")};
    s.fields[0].bytes = payload.size();
    return encode(s.to_message(std::move(payload)));
  }

  std::string loop(const std::string& run_id, int64_t first, int64_t max, double t = 0) const {
    const Manifest& m = program_->manifest;
    SectionBuffer state = make_section(m.state, m, ParamValues{}).value();
    std::memcpy(state.data(*state.find("t")), &t, sizeof t);
    return encode(LoopMsg{run_id, first, max}.to_message(
        std::string(state.bytes.begin(), state.bytes.end())));
  }

  size_t aggregate_bytes() const {
    const Manifest& m = program_->manifest;
    return make_section(m.aggregate, m, ParamValues{}).value().bytes.size();
  }

  std::string iterate(const std::string& run_id, int64_t it, double t = 0) const {
    const Manifest& m = program_->manifest;
    SectionBuffer state = make_section(m.state, m, ParamValues{}).value();
    std::memcpy(state.data(*state.find("t")), &t, sizeof t);
    return encode(
        IterateMsg{run_id, it}.to_message(std::string(state.bytes.begin(), state.bytes.end())));
  }

  // The sum and count of an iteration result's (folded) aggregate.
  std::pair<double, int64_t> aggregate_of(const Message& m) const {
    const Manifest& man = program_->manifest;
    SectionBuffer agg = make_section(man.aggregate, man, ParamValues{}).value();
    EXPECT_EQ(m.payload.size(), agg.bytes.size());
    if (m.payload.size() != agg.bytes.size()) return {};
    std::memcpy(agg.bytes.data(), m.payload.data(), agg.bytes.size());
    double sum;
    int64_t count;
    std::memcpy(&sum, agg.data(*agg.find("sum")), sizeof sum);
    std::memcpy(&count, agg.data(*agg.find("count")), sizeof count);
    return {sum, count};
  }

  Message next_reply() {
    auto f = replies_.pop_for(std::chrono::seconds(10));
    EXPECT_TRUE(f.has_value()) << "no reply";
    if (!f) return {};
    return decode(*f).value();
  }

  std::string owner(size_t i) {
    std::lock_guard<std::mutex> l(executors_[i]->mu);
    return executors_[i]->owner;
  }

  std::shared_ptr<const ProgramImage> program_;
  std::vector<std::unique_ptr<ExecutorHandle>> executors_;
  Mailbox<std::string> replies_;
};

}  // namespace lizard::testing
