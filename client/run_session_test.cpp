#include "client/run_session.h"

#include <gtest/gtest.h>

#include <cstring>

#include "client/testing/run_session_fixture.h"
#include "common/clock.h"
#include "dataset/dataset_source_registry.h"
#include "tests/allocations.h"

namespace lizard {
namespace {

using nlohmann::json;
using testing::as_doubles;
using testing::FakeExecutor;
using testing::RunSessionTest;

// An iteration's result says whether some executor ran it on a quick build:
// until the last of them has switched to its optimised build.
TEST_F(RunSessionTest, EachResultSaysWhetherAnExecutorRanItOnAQuickBuild) {
  exec(0).quick_until = 2;
  exec(1).quick_until = 1;
  auto s = session();
  s->post(run_start("r1.0", 5, {{0, 0, 3}, {1, 3, 2}}));
  auto ready = RunReadyMsg::parse(next_reply().header).value();
  ASSERT_TRUE(ready.ok) << ready.error;
  EXPECT_TRUE(ready.quick_build);
  std::vector<bool> quick;
  for (int it = 0; it < 4; ++it) {
    s->post(iterate("r1.0", it, 0.5));
    auto ir = IterationResultMsg::parse(next_reply().packed).value();
    ASSERT_TRUE(ir.ok) << ir.error;
    quick.push_back(ir.quick_build);
  }
  EXPECT_EQ(quick, (std::vector<bool>{true, true, false, false}));
}

TEST_F(RunSessionTest, ARunLoadsItsRowsIteratesAndReturnsItsOutputs) {
  auto s = session();
  s->post(run_start("r1.0", 5, {{0, 0, 3}, {1, 3, 2}}));
  Message ready = next_reply();
  ASSERT_EQ(ready.type, MessageType::kRunReady);
  auto r = RunReadyMsg::parse(ready.header).value();
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.compile_ms, 5.0);  // the slowest executor's
  EXPECT_FALSE(r.compile_cache_hit);
  EXPECT_EQ(exec(0).x, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(exec(1).x, (std::vector<double>{4, 5}));
  EXPECT_EQ(exec(1).first_row, 3);
  EXPECT_EQ(owner(0), "r1.0");
  EXPECT_EQ(owner(1), "r1.0");

  s->post(iterate("r1.0", 0, 0.5));
  Message result = next_reply();
  ASSERT_EQ(result.type, MessageType::kIterationResult);
  auto ir = IterationResultMsg::parse(result.packed).value();
  EXPECT_TRUE(ir.ok) << ir.error;
  EXPECT_EQ(ir.iteration, 0);
  EXPECT_EQ(ir.kernel_ms, 2.0);
  // Built-in reducers: the executors' aggregates come folded into one.
  EXPECT_EQ(aggregate_of(result), (std::pair<double, int64_t>{15 + 5 * 0.5, 5}));

  s->post(encode(RunEndMsg{"r1.0", true, {"y"}}.to_message()));
  Message outs = next_reply();
  ASSERT_EQ(outs.type, MessageType::kRunOutputs);
  auto o = RunOutputsMsg::parse(outs.header).value();
  EXPECT_TRUE(o.ok) << o.error;
  ASSERT_EQ(o.fields.size(), 1u);
  EXPECT_EQ(o.fields[0].name, "y");
  EXPECT_EQ(o.fields[0].bytes, 5 * sizeof(double));
  EXPECT_EQ(as_doubles(outs.payload.data(), outs.payload.size()),
            (std::vector<double>{2, 4, 6, 8, 10}));
  const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
  while (!s->finished() && SteadyClock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(s->finished());
  EXPECT_EQ(owner(0), "");
  EXPECT_EQ(exec(0).ended, 1);
  EXPECT_EQ(exec(0).ended_wanting, 1);
}

TEST_F(RunSessionTest, ARunEndWithoutOutputsIsNotAnswered) {
  auto s = session();
  s->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
  EXPECT_FALSE(replies_.pop_for(std::chrono::milliseconds(100)).has_value());
  EXPECT_EQ(exec(0).ended, 1);
  EXPECT_EQ(exec(0).ended_wanting, 0);
  EXPECT_EQ(owner(0), "");
}

TEST_F(RunSessionTest, LongIterationsReportProgressPerSlice) {
  auto s = session();
  s->post(run_start("r2.0", 3 * 4096, {}, /*progress=*/true));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(iterate("r2.0", 4));
  std::vector<int64_t> done;
  Message m = next_reply();
  while (m.type == MessageType::kProgress) {
    auto p = ProgressMsg::parse(m.header).value();
    EXPECT_EQ(p.run_id, "r2.0");
    EXPECT_EQ(p.iteration, 4);
    EXPECT_EQ(p.executor, 0);
    done.push_back(p.rows_done);
    m = next_reply();
  }
  EXPECT_EQ(done, (std::vector<int64_t>{4096, 8192, 12288}));
  ASSERT_EQ(m.type, MessageType::kIterationResult);
  const double n = 3 * 4096;
  EXPECT_EQ(aggregate_of(m), (std::pair<double, int64_t>{n * (n + 1) / 2, 3 * 4096}));
  EXPECT_EQ(exec(0).slices, 3);
  EXPECT_EQ(exec(0).iterations,
            (std::vector<int64_t>{4, 4, 4}));  // each slice the server's iteration
}

TEST_F(RunSessionTest, UploadedRowsAreTakenFromTheChunksThatCameFirst) {
  std::vector<uint8_t> rows;
  for (double v : {7.0, 8.0, 9.0}) {
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    rows.insert(rows.end(), b, b + 8);
  }
  auto file = UploadRows::create(rows.size());
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->write(0, rows.data(), rows.size()).ok());
  auto s = session({{0, *file}});
  RunStartMsg start;
  start.run_id = "r3.0";
  start.hash = program_->hash;
  start.rows = 3;
  start.parts = {{1, 0, 3}};
  start.fields = {DatasetSourceRegistry::global().field("x", "chunks"),
                  DatasetSourceRegistry::global().field("y", "none")};
  s->post(encode(start.to_message()));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  EXPECT_EQ(exec(1).x, (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(exec(0).begun, 0);
}

std::string ready_error(const Message& m) {
  auto r = RunReadyMsg::parse(m.header).value();
  EXPECT_FALSE(r.ok);
  return r.error;
}

TEST_F(RunSessionTest, BadRunStartsAreAnsweredWithTheReason) {
  {
    auto s = session();
    RunStartMsg start;
    start.run_id = "r4.0";
    start.hash = "unknown";
    s->post(encode(start.to_message()));
    EXPECT_EQ(ready_error(next_reply()), "this worker has not built program unknown");
  }
  {
    auto s = session();
    s->post(run_start("r5.0", 2, {{7, 0, 2}}));
    EXPECT_EQ(ready_error(next_reply()), "run_start names executor 7");
  }
  {
    auto s = session();
    RunStartMsg start = RunStartMsg::parse(decode(run_start("r6.0", 4)).value().header).value();
    s->post(encode(start.to_message("short")));
    EXPECT_EQ(ready_error(next_reply()), "run_start: inline rows exceed the payload");
  }
  EXPECT_EQ(owner(0), "");
  EXPECT_EQ(exec(0).begun, 0);
}

// A run_start of 3 rows on executor 0 whose field x comes from `source`
// naming the raw file `path`.
RunStartMsg raw_file_start(const std::string& run_id, const std::string& hash,
                           const std::string& source, const std::string& path) {
  RunStartMsg m;
  m.run_id = run_id;
  m.hash = hash;
  m.rows = 3;
  m.parts = {{0, 0, 3}};
  m.fields = {DatasetSourceRegistry::global().field("x", source),
              DatasetSourceRegistry::global().field("y", "none")};
  m.fields[0].path = path;
  m.fields[0].format = "raw";
  return m;
}

// A worker started with --data-root reads dataset files only from there,
// whatever the server let through.
TEST_F(RunSessionTest, DatasetPathsOutsideTheDataRootsAreRefused) {
  TempDir dir;
  std::filesystem::create_directories(dir.path("data"));
  std::string rows(24, '\0');
  const std::string inside = dir.write("data/x.raw", rows);
  const std::string outside = dir.write("x.raw", rows);
  auto roots = DataRoots::make({dir.path("data")}, "worker");
  ASSERT_TRUE(roots.ok());
  auto start = [&](const std::string& run_id, const std::string& path) {
    RunStartMsg m = raw_file_start(run_id, program_->hash, "path", path);
    return encode(m.to_message());
  };
  {
    auto s = session({}, nullptr, &roots.value());
    s->post(start("r8.0", outside));
    EXPECT_EQ(ready_error(next_reply()),
              "dataset field 'x': dataset path is outside the worker's data roots (--data-root)");
  }
  {
    auto s = session({}, nullptr, &roots.value());
    s->post(start("r9.0", inside));
    ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
    EXPECT_EQ(exec(0).x, (std::vector<double>{0, 0, 0}));
  }
}

// An upload this worker holds no rows of is read from the server's copy,
// where this worker sees the very version the run pinned and its own
// --data-root directories allow it; otherwise the worker says the rows are
// missing, and the server sends them.
TEST_F(RunSessionTest, AnUploadNotHeldHereIsReadFromTheServersCopyOfItsVersionOnly) {
  TempDir dir;
  std::string rows;
  for (double v : {7.0, 8.0, 9.0}) rows.append(reinterpret_cast<const char*>(&v), 8);
  const std::string copy = dir.write("u1.raw", rows);
  const FileIdentity version = FileIdentity::of(copy).value();
  auto start = [&](const std::string& run_id, FileIdentity pinned) {
    RunStartMsg m = raw_file_start(run_id, program_->hash, "cached", copy);
    m.fields[0].upload = "u1";
    m.files = {{"x", copy, pinned, ""}};
    return encode(m.to_message());
  };
  auto missing = [](const Message& m) { return RunReadyMsg::parse(m.header).value().missing; };
  {
    auto s = session();
    s->post(start("r1.0", version));
    ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
    EXPECT_EQ(exec(0).x, (std::vector<double>{7, 8, 9}));
  }
  {
    FileIdentity other = version;
    other.size += 8;  // the server's copy is another version than this worker sees
    auto s = session();
    s->post(start("r2.0", other));
    EXPECT_EQ(missing(next_reply()), std::vector<int64_t>{0});
  }
  {
    std::filesystem::create_directories(dir.path("data"));
    auto roots = DataRoots::make({dir.path("data")}, "worker");
    ASSERT_TRUE(roots.ok());
    auto s = session({}, nullptr, &roots.value());
    s->post(start("r3.0", version));
    EXPECT_EQ(missing(next_reply()), std::vector<int64_t>{0});
  }
}

TEST_F(RunSessionTest, AnExecutorThatCannotBeginFailsTheRunAndIsLetGo) {
  exec(1).fail_begin = "out of device memory";
  auto s = session();
  s->post(run_start("r7.0", 4, {{0, 0, 2}, {1, 2, 2}}));
  EXPECT_EQ(ready_error(next_reply()), "out of device memory");
  EXPECT_EQ(owner(0), "");
  EXPECT_EQ(owner(1), "");
  EXPECT_EQ(exec(0).ended, 1);  // what did begin is freed
}

TEST_F(RunSessionTest, IterationErrorsAreAnswered) {
  auto s = session();
  s->post(run_start("r8.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(iterate("r9.0", 0));
  auto other = IterationResultMsg::parse(next_reply().packed).value();
  EXPECT_FALSE(other.ok);
  EXPECT_EQ(other.error, "no such run on this worker");
  s->post(encode(IterateMsg{"r8.0", 1}.to_message("abc")));
  auto wrong = IterationResultMsg::parse(next_reply().packed).value();
  EXPECT_FALSE(wrong.ok);
  EXPECT_EQ(wrong.error.rfind("state of 3 bytes; expected ", 0), 0u) << wrong.error;
  exec(0).fail_iterate = "illegal memory access";
  s->post(iterate("r8.0", 2));
  Message failed = next_reply();
  auto f = IterationResultMsg::parse(failed.packed).value();
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.iteration, 2);
  EXPECT_EQ(f.error, "illegal memory access");
  EXPECT_TRUE(failed.payload.empty());
}

TEST_F(RunSessionTest, ARunWaitsForItsExecutorUntilThePreviousRunLetsItGo) {
  auto first = session();
  first->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  auto second = session();
  second->post(run_start("r2.0", 3));
  EXPECT_FALSE(replies_.pop_for(std::chrono::milliseconds(100)).has_value());
  EXPECT_EQ(owner(0), "r1.0");
  first->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
  Message ready = next_reply();
  auto r = RunReadyMsg::parse(ready.header).value();
  EXPECT_EQ(r.run_id, "r2.0");
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(owner(0), "r2.0");
  EXPECT_EQ(exec(0).x, (std::vector<double>{1, 2, 3}));
}

TEST_F(RunSessionTest, AbortingAWaitingRunLeavesTheHolderAlone) {
  auto first = session();
  first->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  auto second = session();
  second->post(run_start("r2.0", 3));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  second->abort();
  second.reset();  // joins its thread: it stopped waiting
  EXPECT_EQ(owner(0), "r1.0");
  first->post(iterate("r1.0", 0));
  Message m = next_reply();  // the aborted run answered nothing
  ASSERT_EQ(m.type, MessageType::kIterationResult);
  EXPECT_TRUE(IterationResultMsg::parse(m.packed)->ok);
}

// The iterations the server sends, once their buffers have grown, allocate
// nothing in the worker: the iterate frames handled go back to the pool the
// connection receives into, and the results' buffers come from it.
TEST_F(RunSessionTest, AnIterationAllocatesNothingOnceItsBuffersHaveGrown) {
  constexpr int kIterations = 40;
  std::vector<uint64_t> at_result;  // the process's allocations at each result sent
  at_result.reserve(kIterations);
  IterationResultMsg result;  // each result read into it, as the server would
  std::atomic<int> results{0}, failed{0};
  SessionContext ctx = context();
  ctx.frames = std::make_shared<FramePool>();
  ctx.send = [&, pool = ctx.frames](OutgoingFrame sent) {
    std::string frame = testing::whole(std::move(sent));
    if (frame_type(frame).value() != MessageType::kIterationResult)
      return replies_.push(std::move(frame));
    at_result.push_back(testing::allocations());
    if (!result.read(decode_view(frame)->packed).ok() || !result.ok) ++failed;
    pool->give(std::move(frame));
    ++results;
  };
  RunSession s(std::move(ctx), {});
  s.post(run_start("r1.0", 5, {{0, 0, 3}, {1, 3, 2}}));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  std::vector<std::string> frames;
  for (int it = 0; it < kIterations; ++it) frames.push_back(iterate("r1.0", it, 0.5));
  const auto deadline = SteadyClock::now() + std::chrono::seconds(20);
  for (int it = 0; it < kIterations; ++it) {
    s.post(std::move(frames[static_cast<size_t>(it)]));
    while (results <= it && SteadyClock::now() < deadline) std::this_thread::yield();
  }
  ASSERT_EQ(results, kIterations);
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(result.iteration, kIterations - 1);
  EXPECT_EQ(at_result.back() - at_result[4], 0u)
      << "allocations in iterations 5.." << kIterations - 1;
  s.post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
}

}  // namespace
}  // namespace lizard
