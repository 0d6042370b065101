// BuildService: an offer is filed under the key the server computes from
// the program it holds and the worker's hello, so it is served only to
// workers of the same toolchain and architecture and only for that
// program; bad offers are refused; a deleted program's builds go.
#include "buildstore/build_service.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <vector>

#include "common/sha256.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<ProgramImage> program(char c) {
  auto p = std::make_shared<ProgramImage>();
  p->hash = std::string(64, c);
  p->manifest.name = std::string("program-") + c;
  ParamSpec k;
  k.name = "k";
  k.specialize = true;
  p->manifest.params = {k};
  return p;
}

HelloMsg hello(const std::string& toolchain, const std::string& arch = "") {
  HelloMsg h;
  h.toolchain = toolchain;
  ExecutorInfo e;
  e.kind = arch.empty() ? "cpu" : "cuda";
  e.arch = arch;
  h.executors = {e};
  return h;
}

BuildOfferMsg offer(const std::string& hash, int k, const std::string& payload,
                    const std::string& arch = "cpu") {
  BuildOfferMsg m;
  m.hash = hash;
  m.values = {{"k", k}};
  m.arch = arch;
  m.sha256 = sha256_hex(payload);
  m.bytes = payload.size();
  return m;
}

BuildFetchMsg fetch(const std::string& hash, int k, const std::string& arch = "cpu") {
  BuildFetchMsg m;
  m.request = 9;
  m.hash = hash;
  m.values = {{"k", k}};
  m.arch = arch;
  return m;
}

class BuildServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("lizard-build-service-test-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    programs_[a_->hash] = a_;
    programs_[b_->hash] = b_;
    BuildServiceHooks hooks;
    hooks.find_program = [this](const std::string& h) -> std::shared_ptr<const ProgramImage> {
      std::lock_guard<std::mutex> l(mu_);
      auto it = programs_.find(h);
      return it == programs_.end() ? nullptr : it->second;
    };
    hooks.send = [this](const std::string& worker, std::string frame) {
      std::lock_guard<std::mutex> l(mu_);
      sent_.push_back({worker, std::move(frame)});
    };
    BuildServiceOptions o;
    o.max_build_bytes = 1000;
    service_ = std::make_unique<BuildService>(dir_.string(), o, hooks);
    service_->joined("w1", hello("tc"));
    service_->joined("w2", hello("tc"));
    service_->joined("other-compiler", hello("tc2"));
    service_->joined("gpu", hello("tc", "sm_90"));
    service_->joined("silent", hello(""));
  }
  void TearDown() override {
    service_.reset();
    fs::remove_all(dir_);
  }
  // What `worker` is handed for `m`: the payload, or "" when none.
  std::string fetched(const std::string& worker, const BuildFetchMsg& m) {
    std::string payload;
    BuildFetchedMsg answer = service_->handle_fetch(worker, m, &payload);
    EXPECT_EQ(answer.request, m.request);
    if (!answer.found) return "";
    EXPECT_EQ(answer.sha256, sha256_hex(payload));
    return payload;
  }

  fs::path dir_;
  std::shared_ptr<ProgramImage> a_ = program('a'), b_ = program('b');
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const ProgramImage>> programs_;
  std::vector<std::pair<std::string, std::string>> sent_;
  std::unique_ptr<BuildService> service_;
};

TEST_F(BuildServiceTest, AnOfferedBuildIsHandedToAWorkerOfTheSameToolchain) {
  auto key = service_->handle_offer("w1", offer(a_->hash, 4, "build a k=4"), "build a k=4");
  ASSERT_TRUE(key.ok()) << key.status().message();
  EXPECT_EQ(fetched("w2", fetch(a_->hash, 4)), "build a k=4");
  EXPECT_EQ(fetched("w2", fetch(a_->hash, 5)), "");              // other values
  EXPECT_EQ(fetched("w2", fetch(b_->hash, 4)), "");              // another program
  EXPECT_EQ(fetched("other-compiler", fetch(a_->hash, 4)), "");  // another compiler
  EXPECT_EQ(fetched("gpu", fetch(a_->hash, 4, "sm_90")), "");    // another architecture
  EXPECT_EQ(fetched("w2", fetch(a_->hash, 4, "sm_90")), "");     // not the worker's
}

// The key is the server's: the same offer made for program b is filed
// apart from a's, and never replaces it.
TEST_F(BuildServiceTest, AnOfferIsFiledUnderTheKeyTheServerComputes) {
  auto ka = service_->handle_offer("w1", offer(a_->hash, 4, "good"), "good");
  auto kb = service_->handle_offer("w1", offer(b_->hash, 4, "evil"), "evil");
  ASSERT_TRUE(ka.ok() && kb.ok());
  EXPECT_NE(*ka, *kb);
  EXPECT_EQ(*ka, *build_key(a_->manifest, a_->hash, offer(a_->hash, 4, "good"), "tc"));
  EXPECT_EQ(fetched("w2", fetch(a_->hash, 4)), "good");
  EXPECT_TRUE(fs::is_regular_file(dir_ / a_->hash / (*ka + ".build")));
  EXPECT_TRUE(fs::is_regular_file(dir_ / b_->hash / (*kb + ".build")));
  // A second offer of a kept build changes nothing.
  ASSERT_TRUE(service_->handle_offer("w2", offer(a_->hash, 4, "other"), "other").ok());
  EXPECT_EQ(fetched("w2", fetch(a_->hash, 4)), "good");
}

TEST_F(BuildServiceTest, RefusesBadOffers) {
  auto refused = [&](const std::string& worker, const BuildOfferMsg& m, const std::string& p) {
    return !service_->handle_offer(worker, m, p).ok();
  };
  EXPECT_TRUE(refused("w1", offer(std::string(64, 'c'), 4, "x"), "x"));  // unknown program
  EXPECT_TRUE(refused("w1", offer(a_->hash, 4, "x"), "y"));              // digest
  BuildOfferMsg short_one = offer(a_->hash, 4, "x");
  short_one.bytes = 2;
  EXPECT_TRUE(refused("w1", short_one, "x"));  // length
  EXPECT_TRUE(refused("w1", offer(a_->hash, 4, std::string(1001, 'x')), std::string(1001, 'x')));
  EXPECT_TRUE(refused("w1", offer(a_->hash, 4, "x", "sm_90"), "x"));  // not its architecture
  EXPECT_TRUE(refused("silent", offer(a_->hash, 4, "x"), "x"));       // no toolchain
  EXPECT_TRUE(refused("stranger", offer(a_->hash, 4, "x"), "x"));     // not joined
  BuildOfferMsg not_values = offer(a_->hash, 4, "x");
  not_values.values = {{"max_iterations", 4}};
  EXPECT_TRUE(refused("w1", not_values, "x"));
  service_->left("w1");
  EXPECT_TRUE(refused("w1", offer(a_->hash, 4, "x"), "x"));  // gone
  EXPECT_EQ(service_->store().size(), 0u);
}

TEST_F(BuildServiceTest, ADeletedProgramsBuildsGo) {
  ASSERT_TRUE(service_->handle_offer("w1", offer(a_->hash, 4, "a4"), "a4").ok());
  ASSERT_TRUE(service_->handle_offer("w1", offer(b_->hash, 4, "b4"), "b4").ok());
  {
    std::lock_guard<std::mutex> l(mu_);
    programs_.erase(a_->hash);
  }
  service_->drop_program(a_->hash);
  service_->drain();
  EXPECT_FALSE(fs::exists(dir_ / a_->hash));
  EXPECT_EQ(fetched("w2", fetch(a_->hash, 4)), "");
  EXPECT_EQ(fetched("w2", fetch(b_->hash, 4)), "b4");
}

// Through the service's thread: the offer is kept, the fetch answered with
// a build_fetched frame carrying the bytes.
TEST_F(BuildServiceTest, QueuedOffersAndFetchesAreHandledOnItsThread) {
  service_->offer("w1", offer(a_->hash, 4, "a4"), "a4");
  service_->fetch("w2", fetch(a_->hash, 4));
  service_->offer("w1", offer(a_->hash, 5, std::string(2000, 'x')), std::string(2000, 'x'));
  service_->drain();
  std::lock_guard<std::mutex> l(mu_);
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(sent_[0].first, "w2");
  auto m = decode(sent_[0].second);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->type, MessageType::kBuildFetched);
  auto answer = BuildFetchedMsg::parse(m->header);
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->found);
  EXPECT_EQ(m->payload, "a4");
  EXPECT_EQ(service_->store().size(), 1u);  // the oversized one was not taken
}

}  // namespace
}  // namespace lizard
