// RunBook across restarts: unfinished runs whose requests were kept come
// back (queued ones queued, running ones to resume from their checkpoint),
// a full disk refuses a run without listing it, and prune() lets old
// finished runs go with the uploads only they named.
#include <gtest/gtest.h>

#include <filesystem>

#include "server/durable_write.h"
#include "server/run_book.h"
#include "server/testing/fakes.h"

namespace lizard {
namespace {

using nlohmann::json;

const char* kConfig = R"(
sources: {cuda: kernel.cu}
dataset:
  x: {type: float64, shape: [rows]}
state: {total: {type: float64}}
aggregate: {sum: {type: float64, reduce: sum}}
iterate: [k]
)";

class RunBookDurabilityTest : public ::testing::Test {
 protected:
  void SetUp() override { program_ = testing::make_test_program(kConfig); }
  void TearDown() override { fail_next_storage_writes(0); }

  static json body_of(const std::string& upload = "") {
    json b = {{"max_iterations", 7}};
    b["dataset"]["x"] =
        upload.empty() ? json{{"values", {1.0, 2.0, 3.0}}} : json{{"upload", upload}};
    return b;
  }
  // Finds the uploads in dir_ by their id (files written by the test).
  UploadLookup uploads() {
    return [this](const std::string& id) -> Result<std::pair<std::string, FileFormat>> {
      if (id != "u1" && id != "u2") return not_found("no such dataset: " + id);
      return std::make_pair(dir_.write(id + ".raw", std::string(3 * sizeof(double), '\0')),
                            FileFormat::kRaw);
    };
  }
  Result<std::shared_ptr<RunRecord>> enqueue(RunBook& book, const json& body,
                                             bool answered_when_done = false) {
    auto req = parse_run_request(program_->image, body, uploads());
    EXPECT_TRUE(req.ok()) << req.status().message();
    return book.enqueue(program_, program_->image.hash, std::move(req).value(), body,
                        answered_when_done);
  }
  RunBook::ProgramLookup programs() {
    return [this](const std::string& hash) {
      return hash == program_->image.hash ? program_ : nullptr;
    };
  }
  static std::string status_of(const RunBook& book, const std::string& id) {
    auto j = book.get_json(id);
    return j.ok() ? j->value("status", "?") : j.status().message();
  }

  TempDir dir_;
  std::shared_ptr<ProgramEntry> program_;
};

TEST_F(RunBookDurabilityTest, UnfinishedRunsComeBackAfterARestart) {
  {
    RunBook book(dir_.path());
    auto r1 = enqueue(book, body_of()).value();
    ASSERT_TRUE(book.start(r1, {{"w1", 0}, {"w2", 0}}));
    book.persist(r1);
    book.checkpoint(r1, {4, false, std::string(8, 'S'), std::string(8, 'A')});
    auto r2 = enqueue(book, body_of("u1")).value();
    EXPECT_EQ(r2->id, "r2");
  }  // the server dies: nothing is finished
  RunBook book(dir_.path());
  EXPECT_EQ(status_of(book, "r1"), "running");
  EXPECT_EQ(status_of(book, "r2"), "queued");
  auto running = book.resume(programs(), uploads(), 15);
  ASSERT_EQ(running.size(), 1u);
  const auto& r1 = running[0];
  EXPECT_EQ(r1->id, "r1");
  EXPECT_EQ(r1->status, RunStatus::kRunning);
  EXPECT_TRUE(r1->needs_executors);
  EXPECT_TRUE(r1->restarted);
  EXPECT_EQ(r1->resume_executors, 2);
  ASSERT_TRUE(r1->resume_from.has_value());
  EXPECT_EQ(r1->resume_from->iteration, 4);
  EXPECT_EQ(r1->resume_from->state, std::string(8, 'S'));
  EXPECT_EQ(r1->request.max_iterations, 7);
  EXPECT_EQ(r1->request.rows, 3);
  // It waits for its two executors; the queued run may not take them meanwhile.
  auto pending = book.pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].id, "r1");
  EXPECT_EQ(pending[0].min, 2);
  EXPECT_TRUE(book.start(r1, {{"w1", 0}, {"w2", 0}}));  // they are back
  pending = book.pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].id, "r2");
  EXPECT_EQ(book.find("r2")->uploads, std::vector<std::string>{"u1"});
  // Ids go on after the restored ones.
  EXPECT_EQ(enqueue(book, body_of()).value()->id, "r3");
  // A finished run leaves no checkpoint behind to resume from.
  book.finish(r1, Status::Ok());
  RunBook again(dir_.path());
  EXPECT_EQ(status_of(again, "r1"), "done");
  EXPECT_EQ(again.resume(programs(), uploads(), 15).size(), 0u);
  EXPECT_EQ(status_of(again, "r2"), "queued");
}

TEST_F(RunBookDurabilityTest, ARunThatCannotResumeFailsWithTheReason) {
  {
    RunBook book(dir_.path());
    ASSERT_TRUE(enqueue(book, body_of("u2")).ok());
    ASSERT_TRUE(enqueue(book, body_of()).ok());
  }
  RunBook book(dir_.path());
  auto no_u2 = [](const std::string& id) -> Result<std::pair<std::string, FileFormat>> {
    return not_found("no such dataset: " + id);
  };
  EXPECT_TRUE(book.resume(programs(), no_u2, 15).empty());
  json r1 = book.get_json("r1").value();
  EXPECT_EQ(r1["status"], "failed");
  EXPECT_NE(r1["error"].get<std::string>().find("no such dataset: u2"), std::string::npos)
      << r1.dump();
  EXPECT_EQ(status_of(book, "r2"), "queued");
  RunBook gone(dir_.path());  // and with its program gone
  EXPECT_TRUE(gone.resume([](const std::string&) { return nullptr; }, no_u2, 15).empty());
  EXPECT_NE(gone.get_json("r2").value()["error"].get<std::string>().find("no longer registered"),
            std::string::npos);
}

// A run whose submitter waits for its end (?wait=1) is stored off its path:
// it is queued even while the disk refuses writes, it is in the store (with
// its request, so that it resumes) once the writes land, and its finished
// record is what stays.
TEST_F(RunBookDurabilityTest, ARunAnsweredWhenDoneIsStoredInTheBackground) {
  {
    RunBook book(dir_.path());
    fail_next_storage_writes(1);  // the request's write, off the run's path
    auto refused_write = enqueue(book, body_of(), true);
    ASSERT_TRUE(refused_write.ok()) << refused_write.status().message();
    auto r2 = enqueue(book, body_of(), true).value();
    ASSERT_TRUE(book.start(r2, {{"w1", 0}}));
    book.flush_writes();
    RunBook restarted(dir_.path());
    EXPECT_EQ(restarted.list_json().value().size(), 1u) << "r1's request never reached the store";
    EXPECT_EQ(status_of(restarted, "r2"), "running");
    auto resumed = restarted.resume(programs(), uploads(), 0);
    ASSERT_EQ(resumed.size(), 1u);
    EXPECT_EQ(resumed[0]->id, "r2");
  }
  RunBook book(dir_.path());
  auto r3 = enqueue(book, body_of(), true).value();
  ASSERT_TRUE(book.start(r3, {{"w1", 0}}));
  book.persist(r3);
  book.finish(r3, Status::Ok());  // its queued and running records may still be pending
  book.flush_writes();
  RunBook again(dir_.path());
  EXPECT_EQ(status_of(again, "r3"), "done");
}

// However the writer's background writes and the runs' ends interleave,
// every run's finished record is the one that stays.
TEST_F(RunBookDurabilityTest, NoBackgroundWriteOutlivesAFinishedRecord) {
  constexpr int kRuns = 100;
  {
    RunBook book(dir_.path());
    for (int i = 0; i < kRuns; ++i) {
      auto run = enqueue(book, body_of(), true).value();
      ASSERT_TRUE(book.start(run, {{"w1", 0}}));
      book.persist(run);
      book.checkpoint(run, {1, false, std::string(8, 'S'), std::string(8, 'A')});
      book.finish(run, Status::Ok());
    }
  }
  RunBook again(dir_.path());
  for (int i = 1; i <= kRuns; ++i) EXPECT_EQ(status_of(again, "r" + std::to_string(i)), "done");
  EXPECT_TRUE(again.resume(programs(), uploads(), 0).empty()) << "a finished run came back";
}

TEST_F(RunBookDurabilityTest, AFullDiskRefusesTheRunAndListsNothing) {
  RunBook book(dir_.path());
  fail_next_storage_writes(1);
  auto refused = enqueue(book, body_of());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kStorageFull);
  EXPECT_TRUE(book.pending().empty());
  EXPECT_TRUE(book.list_json().value().empty());
  ASSERT_TRUE(enqueue(book, body_of()).ok());
  RunBook again(dir_.path());
  EXPECT_EQ(again.list_json().value().size(), 1u);
}

// A run whose result the store cannot take (a full disk) is never reported
// done: it ends failed with the reason, stored on the space the store keeps
// in reserve, and a restarted server does not run it again.
TEST_F(RunBookDurabilityTest, AResultThatCannotBeStoredEndsFailedAndDoesNotRunAgain) {
  {
    RunBook book(dir_.path());
    auto r1 = enqueue(book, body_of()).value();
    ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
    book.checkpoint(r1, {3, false, std::string(8, 'S'), std::string(8, 'A')});
    book.update(r1, [](RunRecord& r) {
      r.iterations = 7;
      r.outputs["x"] = OutputField{DType::kFloat64, {3}, std::string(24, '\0')};
    });
    json answered;
    book.add_waiter(r1, [&](HttpResponse r) { answered = json::parse(r.body); });
    book.flush_writes();          // the checkpoint's own write is not the one that fails
    fail_next_storage_writes(1);  // the finished record meets a full disk
    book.finish(r1, Status::Ok());
    json r = book.get_json("r1").value();
    EXPECT_EQ(r["status"], "failed") << r.dump(2);
    // Which write meets the full disk (the record's, or an output's file)
    // depends on the store; either way the error says both.
    EXPECT_NE(r.value("error", "").find("could not store its result: "), std::string::npos)
        << r.dump(2);
    EXPECT_NE(r.value("error", "").find("the server's disk is full"), std::string::npos)
        << r.dump(2);
    EXPECT_FALSE(r.contains("fields")) << r.dump(2);
    EXPECT_EQ(answered["status"], "failed");
    EXPECT_FALSE(book.field_npy("r1", "x").ok());
  }
  for (int restart = 0; restart < 3; ++restart) {
    RunBook book(dir_.path());
    EXPECT_EQ(status_of(book, "r1"), "failed") << "restart " << restart;
    EXPECT_TRUE(book.resume(programs(), uploads(), 15).empty()) << "restart " << restart;
    EXPECT_TRUE(book.pending().empty());
  }
}

// The state directory removed under a running server: runs are refused with
// the reason (500), none is reported done, and the book says the store is
// broken.
TEST_F(RunBookDurabilityTest, ARemovedStateDirectoryRefusesRunsAndSaysWhy) {
  const std::string state = dir_.path() + "/state";
  RunBook book(state);
  auto r1 = enqueue(book, body_of()).value();
  ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
  EXPECT_TRUE(book.store_health().ok());
  std::filesystem::remove_all(state);
  auto refused = enqueue(book, body_of());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInternal);
  EXPECT_NE(refused.status().message().find("the state directory " + state + " was removed"),
            std::string::npos)
      << refused.status().message();
  EXPECT_EQ(book.list_json().value().size(), 1u);
  EXPECT_FALSE(book.store_health().ok());
  book.finish(r1, Status::Ok());
  EXPECT_EQ(status_of(book, "r1"), "failed");
  EXPECT_FALSE(std::filesystem::exists(state));
}

TEST_F(RunBookDurabilityTest, AShutdownLeavesUnfinishedRunsToResume) {
  {
    RunBook book(dir_.path());
    auto r1 = enqueue(book, body_of()).value();
    ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
    ASSERT_TRUE(enqueue(book, body_of()).ok());
    std::vector<HttpResponse> answers;
    book.add_waiter(r1, [&](HttpResponse a) { answers.push_back(std::move(a)); });
    book.suspend();
    book.finish(r1, unavailable("the server is shutting down"));
    book.fail_queued("the server shut down");
    // Until the server is gone, whoever follows the runs sees them go on.
    EXPECT_EQ(status_of(book, "r1"), "running");
    EXPECT_EQ(status_of(book, "r2"), "queued");
    ASSERT_EQ(answers.size(), 1u);
    EXPECT_EQ(answers[0].status, 503);
    EXPECT_NE(answers[0].body.find("r1 resumes when it starts again"), std::string::npos)
        << answers[0].body;
  }
  RunBook book(dir_.path());
  EXPECT_EQ(book.resume(programs(), uploads(), 15).size(), 1u);
  EXPECT_EQ(status_of(book, "r1"), "running");
  EXPECT_EQ(status_of(book, "r2"), "queued");
}

TEST_F(RunBookDurabilityTest, PruneForgetsOldFinishedRunsAndUploadsOnlyTheyNamed) {
  RunBook book(dir_.path());
  std::vector<std::shared_ptr<RunRecord>> runs;
  for (const char* upload : {"u1", "u2", "u2", ""})
    runs.push_back(enqueue(book, body_of(upload)).value());
  for (int i = 0; i < 3; ++i) book.finish(runs[static_cast<size_t>(i)], Status::Ok());
  // r4 is still queued; of the finished r1..r3 the newest one stays.
  auto unused = book.prune(1, 0);
  EXPECT_EQ(unused, std::vector<std::string>{"u1"});  // u2 is named by r3 still
  EXPECT_EQ(book.get_json("r1").status().code(), Code::kNotFound);
  EXPECT_EQ(book.get_json("r2").status().code(), Code::kNotFound);
  EXPECT_EQ(status_of(book, "r3"), "done");
  EXPECT_EQ(status_of(book, "r4"), "queued");
  RunBook again(dir_.path());  // gone from the store too
  EXPECT_EQ(again.list_json().value().size(), 2u);
  EXPECT_TRUE(again.prune(0, 0).empty());  // no limits: nothing goes
  EXPECT_TRUE(again.prune(0, 1).empty());  // r3 finished just now
  EXPECT_EQ(again.list_json().value().size(), 2u);
  EXPECT_TRUE(again.has_unfinished_of(program_->image.hash));
  EXPECT_FALSE(again.has_unfinished_of("0000"));
}

}  // namespace
}  // namespace lizard
