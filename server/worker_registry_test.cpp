#include "server/worker_registry.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/clock.h"
#include "server/testing/fakes.h"

namespace lizard {
namespace {

using nlohmann::json;
using testing::FakeWorkerLink;

HelloMsg hello(size_t executors, uint64_t free_bytes = 1 << 20) {
  HelloMsg h;
  h.hostname = "node";
  h.backend = "cpu";
  for (size_t i = 0; i < executors; ++i) {
    ExecutorInfo e;
    e.kind = "cpu";
    e.weight = 1.0 + static_cast<double>(i);
    e.free_memory = free_bytes;
    h.executors.push_back(e);
  }
  return h;
}

Message program(const std::string& hash) {
  return ProgramMsg{hash, {{"config", "x"}}}.to_message();
}

const WorkerView* find_view(const std::vector<WorkerView>& v, const std::string& id) {
  for (const auto& w : v)
    if (w.id == id) return &w;
  return nullptr;
}

struct Joined {
  WorkerRegistry reg;
  std::shared_ptr<FakeWorkerLink> l1 = std::make_shared<FakeWorkerLink>("10.0.0.1:1");
  std::shared_ptr<FakeWorkerLink> l2 = std::make_shared<FakeWorkerLink>("10.0.0.2:1");
  std::string w1, w2;
  Joined(size_t e1 = 2, size_t e2 = 1) {
    w1 = reg.connect(l1);
    w2 = reg.connect(l2);
    EXPECT_TRUE(reg.hello(w1, hello(e1), {}));
    EXPECT_TRUE(reg.hello(w2, hello(e2), {}));
  }
};

TEST(WorkerRegistry, AWorkerCountsOnceItsHelloArrives) {
  WorkerRegistry reg;
  auto link = std::make_shared<FakeWorkerLink>();
  const std::string id = reg.connect(link);
  EXPECT_EQ(reg.joined(), 0u);
  EXPECT_TRUE(reg.view().empty());
  EXPECT_EQ(reg.to_json(id).status().code(), Code::kNotFound);
  EXPECT_TRUE(reg.to_json().empty());

  const std::string frame = encode(program("abc"));
  ASSERT_TRUE(reg.hello(id, hello(2), {{"abc", frame}}));
  EXPECT_EQ(reg.joined(), 1u);
  // The worker learns its id first, then gets every registered program.
  auto sent = link->sent();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].type, MessageType::kWelcome);
  EXPECT_EQ(WelcomeMsg::parse(sent[0].header)->worker_id, id);
  EXPECT_EQ(sent[1].type, MessageType::kProgram);
  auto v = reg.view();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].executors.size(), 2u);
  EXPECT_EQ(v[0].building, std::set<std::string>{"abc"});
  EXPECT_TRUE(v[0].ready.empty());
  auto j = reg.to_json(id);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["address"], link->peer());
  EXPECT_EQ((*j)["programs"]["abc"], "building");
}

TEST(WorkerRegistry, HelloFromAWorkerThatLeftIsRefused) {
  WorkerRegistry reg;
  const std::string id = reg.connect(std::make_shared<FakeWorkerLink>());
  reg.remove(id);
  EXPECT_FALSE(reg.hello(id, hello(1), {}));
  EXPECT_EQ(reg.joined(), 0u);
}

TEST(WorkerRegistry, BuildStatusesShowInTheViewAndTheJson) {
  Joined j;
  j.reg.push_program("p", program("p"));
  EXPECT_EQ(j.l1->sent_of(MessageType::kProgram).size(), 1u);
  EXPECT_EQ(j.l2->sent_of(MessageType::kProgram).size(), 1u);
  j.reg.program_status(j.w1, {"p", true, ""});
  j.reg.program_status(j.w2, {"p", false, "line 3: syntax error"});
  auto v = j.reg.view();
  EXPECT_EQ(find_view(v, j.w1)->ready, std::set<std::string>{"p"});
  EXPECT_EQ(find_view(v, j.w2)->failed.at("p"), "line 3: syntax error");
  json builds = j.reg.builds_of("p");
  EXPECT_EQ(builds[j.w1], "ready");
  EXPECT_EQ(builds[j.w2]["error"], "line 3: syntax error");
  // A worker that has the program is not sent it again.
  j.reg.push_program("p", program("p"));
  EXPECT_EQ(j.l1->sent_of(MessageType::kProgram).size(), 1u);
}

TEST(WorkerRegistry, PushToOneWorkerLeavesTheOthers) {
  Joined j;
  j.reg.push_program("p", program("p"), j.w2);
  EXPECT_TRUE(j.l1->sent_of(MessageType::kProgram).empty());
  EXPECT_EQ(j.l2->sent_of(MessageType::kProgram).size(), 1u);
  EXPECT_EQ(j.reg.builds_of("p").size(), 1u);
}

TEST(WorkerRegistry, AStatusForAProgramTheWorkerWasNotSentIsIgnored) {
  Joined j;
  j.reg.program_status(j.w1, {"never-sent", true, ""});
  EXPECT_TRUE(find_view(j.reg.view(), j.w1)->ready.empty());
  EXPECT_TRUE(j.reg.builds_of("never-sent").empty());
}

// A registration that timed out forgets the program; a worker's late answer
// must not leave a verdict behind that keeps the next registration from
// sending the program again.
TEST(WorkerRegistry, ALateStatusAfterForgettingDoesNotBlockTheNextPush) {
  Joined j;
  j.reg.push_program("p", program("p"));
  auto builds = j.reg.wait_for_builds("p", SteadyClock::now() + std::chrono::milliseconds(50),
                                      [] { return false; });
  EXPECT_EQ(builds.at(j.w1).state, BuildState::kBuilding);
  j.reg.forget_program("p");
  j.reg.program_status(j.w1, {"p", false, "out of memory while compiling"});
  EXPECT_TRUE(j.reg.builds_of("p").empty());
  j.reg.push_program("p", program("p"));
  EXPECT_EQ(j.l1->sent_of(MessageType::kProgram).size(), 2u);
  EXPECT_EQ(j.reg.builds_of("p")[j.w1], "building");
}

TEST(WorkerRegistry, WaitForBuildsReturnsOnceEveryWorkerAnswered) {
  Joined j;
  j.reg.push_program("p", program("p"));
  std::thread answers([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    j.reg.program_status(j.w1, {"p", true, ""});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    j.reg.program_status(j.w2, {"p", false, "bad"});
  });
  const auto t0 = SteadyClock::now();
  auto builds = j.reg.wait_for_builds("p", t0 + std::chrono::seconds(20), [] { return false; });
  answers.join();
  EXPECT_LT(SteadyClock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(builds.at(j.w1).state, BuildState::kReady);
  EXPECT_EQ(builds.at(j.w2).state, BuildState::kFailed);
}

TEST(WorkerRegistry, WaitForBuildsStopsWhenAskedTo) {
  Joined j;
  j.reg.push_program("p", program("p"));
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop = true;
    j.reg.wake();
  });
  const auto t0 = SteadyClock::now();
  j.reg.wait_for_builds("p", t0 + std::chrono::seconds(20), [&] { return stop.load(); });
  stopper.join();
  EXPECT_LT(SteadyClock::now() - t0, std::chrono::seconds(10));
}

TEST(WorkerRegistry, AWorkerLeavingEndsTheWaitForItsBuild) {
  Joined j;
  j.reg.push_program("p", program("p"), j.w1);
  std::thread leaver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    j.reg.remove(j.w1);
  });
  const auto t0 = SteadyClock::now();
  auto builds = j.reg.wait_for_builds("p", t0 + std::chrono::seconds(20), [] { return false; });
  leaver.join();
  EXPECT_LT(SteadyClock::now() - t0, std::chrono::seconds(10));
  EXPECT_TRUE(builds.empty());
}

TEST(WorkerRegistry, ClaimsAreAllOrNothingAndDisjoint) {
  Joined j(2, 1);
  ASSERT_TRUE(j.reg.claim({{j.w1, 0}, {j.w1, 1}}, "r1"));
  // One busy executor refuses the whole claim and changes nothing.
  EXPECT_FALSE(j.reg.claim({{j.w2, 0}, {j.w1, 1}}, "r2"));
  EXPECT_FALSE(find_view(j.reg.view(), j.w2)->executors[0].busy);
  EXPECT_FALSE(j.reg.claim({{j.w2, 5}}, "r2"));
  EXPECT_FALSE(j.reg.claim({{"w99", 0}}, "r2"));
  ASSERT_TRUE(j.reg.claim({{j.w2, 0}}, "r2"));
  auto clients = j.reg.to_json();
  EXPECT_EQ(clients[0]["hardware"]["executors"][1]["run"], "r1");
  EXPECT_EQ(clients[1]["hardware"]["executors"][0]["run"], "r2");

  j.reg.release({{j.w1, 0}}, "r2");  // not r2's: stays
  EXPECT_TRUE(find_view(j.reg.view(), j.w1)->executors[0].busy);
  j.reg.release({{j.w1, 0}}, "r1");
  EXPECT_FALSE(find_view(j.reg.view(), j.w1)->executors[0].busy);
  EXPECT_TRUE(find_view(j.reg.view(), j.w1)->executors[1].busy);
  j.reg.release_run("r1");
  EXPECT_FALSE(find_view(j.reg.view(), j.w1)->executors[1].busy);
  EXPECT_TRUE(find_view(j.reg.view(), j.w2)->executors[0].busy);
  EXPECT_TRUE(j.reg.to_json()[0]["hardware"]["executors"][0]["run"].is_null());
}

TEST(WorkerRegistry, RemovingAWorkerNamesItsRunsAndSendsFailAfterwards) {
  Joined j(2, 1);
  ASSERT_TRUE(j.reg.claim({{j.w1, 0}}, "r1"));
  ASSERT_TRUE(j.reg.claim({{j.w1, 1}, {j.w2, 0}}, "r2"));
  auto runs = j.reg.remove(j.w1);
  std::sort(runs.begin(), runs.end());
  EXPECT_EQ(runs, (std::vector<std::string>{"r1", "r2"}));
  Status st = j.reg.send(j.w1, std::string("frame"));
  EXPECT_EQ(st.code(), Code::kWorkerLost);
  EXPECT_EQ(j.reg.link(j.w1), nullptr);
  EXPECT_TRUE(j.reg.send(j.w2, std::string("frame")).ok());
  EXPECT_EQ(j.l2->frames(), 2u);  // welcome, frame
  EXPECT_EQ(j.reg.joined(), 1u);
}

TEST(WorkerRegistry, SlotsCarryWeightAndTheLatestFreeMemory) {
  Joined j(2, 1);
  auto slots = j.reg.slots({{j.w1, 1}, {j.w2, 0}, {"gone", 0}, {j.w1, 7}});
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].worker_id, j.w1);
  EXPECT_EQ(slots[0].executor, 1);
  EXPECT_EQ(slots[0].weight, 2.0);
  EXPECT_EQ(slots[0].max_rows, 1 << 20);
  j.reg.resources(j.w1, ResourcesMsg{{100, 200}});
  slots = j.reg.slots({{j.w1, 0}, {j.w1, 1}});
  EXPECT_EQ(slots[0].max_rows, 100);
  EXPECT_EQ(slots[1].max_rows, 200);
  EXPECT_EQ(j.reg.to_json(j.w1).value()["hardware"]["executors"][1]["free_memory"], 200);
}

TEST(WorkerRegistry, ClearLetsEveryLinkGo) {
  Joined j;
  j.reg.clear();
  EXPECT_EQ(j.reg.joined(), 0u);
  EXPECT_EQ(j.l1.use_count(), 1);
  EXPECT_EQ(j.l2.use_count(), 1);
}

}  // namespace
}  // namespace lizard
