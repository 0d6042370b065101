// BuildShare against a BuildService, without sockets: a build one worker
// offers is fetched by another into its own compile cache; bytes that do
// not have the stated digest are refused; a server that does not answer
// costs at most the fetch's bound, and one not connected nothing.
#include "buildstore/build_share.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "buildstore/build_service.h"
#include "common/clock.h"
#include "exec/testing/program_variants.h"
#include "program/testing/program_images.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

using testing::variant_with_dims;

class BuildShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("lizard-build-share-test-" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    BuildServiceHooks hooks;
    hooks.find_program = [this](const std::string& h) -> std::shared_ptr<const ProgramImage> {
      return h == program_->hash ? program_ : nullptr;
    };
    hooks.send = [this](const std::string& worker, std::string frame) {
      auto m = decode(frame);
      ASSERT_TRUE(m.ok());
      auto answer = BuildFetchedMsg::parse(m->header);
      ASSERT_TRUE(answer.ok());
      if (answer_ && shares_.count(worker)) shares_[worker]->on_fetched(*answer, m->payload);
    };
    service_ =
        std::make_unique<BuildService>((root_ / "server").string(), BuildServiceOptions{}, hooks);
  }
  void TearDown() override {
    shares_.clear();
    service_.reset();
    fs::remove_all(root_);
  }
  // A worker named `id` with a compile cache of its own, joined and connected.
  BuildShare& worker(const std::string& id,
                     std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    BackendOptions o;
    o.cache_dir = (root_ / id).string();
    ExecutorInfo e;
    e.kind = "cpu";
    auto made = BuildShare::make(
        o, {e},
        [this, id](std::string frame) {
          auto m = decode(frame);
          ASSERT_TRUE(m.ok());
          if (m->type == MessageType::kBuildOffer)
            service_->offer(id, *BuildOfferMsg::parse(m->header), m->payload);
          else
            service_->fetch(id, *BuildFetchMsg::parse(m->header));
        },
        timeout);
    EXPECT_TRUE(made.ok()) << made.status().message();
    HelloMsg h;
    h.toolchain = (*made)->toolchain();
    h.executors = {e};
    service_->joined(id, h);
    (*made)->set_connected(true);
    compilers_[id] = std::move(VariantCompiler::make(o, {e})).value();
    return *(shares_[id] = std::move(made).value());
  }
  // Puts stand-in bytes in `id`'s cache as the build of `v` (nothing compiles).
  void built(const std::string& id, const ProgramVariant& v, const std::string& bytes) {
    for (const auto& e : compilers_[id]->entries(v, BuildTier::kOptimised))
      ASSERT_TRUE(compilers_[id]->store(v.image.hash, e.name, bytes).ok());
  }
  bool cached(const std::string& id, const ProgramVariant& v) { return compilers_[id]->cached(v); }

  fs::path root_;
  std::shared_ptr<const ProgramImage> program_ =
      std::make_shared<ProgramImage>(testing::column_sums_image());
  std::unique_ptr<BuildService> service_;
  bool answer_ = true;
  std::map<std::string, std::unique_ptr<BuildShare>> shares_;
  std::map<std::string, std::unique_ptr<VariantCompiler>> compilers_;
};

TEST_F(BuildShareTest, ABuildOneWorkerOffersIsFetchedByAnother) {
  const ProgramVariant three = variant_with_dims(*program_, 3);
  BuildShare& one = worker("one");
  BuildShare& two = worker("two");
  EXPECT_EQ(one.fetch_missing(three, BuildTier::kOptimised), BuildShare::Got::kCompile);
  built("one", three, "the library for dims=3");
  one.offer(three, BuildTier::kOptimised);
  service_->drain();
  EXPECT_FALSE(cached("two", three));
  EXPECT_EQ(two.fetch_missing(three, BuildTier::kOptimised), BuildShare::Got::kFetched);
  EXPECT_TRUE(cached("two", three));
  EXPECT_EQ(two.fetched(), 1);
  EXPECT_EQ(two.fetch_missing(three, BuildTier::kOptimised), BuildShare::Got::kCached);
  // Other values are another build.
  EXPECT_EQ(two.fetch_missing(variant_with_dims(*program_, 4), BuildTier::kOptimised),
            BuildShare::Got::kCompile);
}

TEST_F(BuildShareTest, BytesChangedOnTheServerAreRefused) {
  const ProgramVariant three = variant_with_dims(*program_, 3);
  BuildShare& one = worker("one");
  built("one", three, "the library for dims=3");
  one.offer(three, BuildTier::kOptimised);
  service_->drain();
  for (const auto& f : fs::recursive_directory_iterator(root_ / "server")) {
    if (f.path().extension() != ".build") continue;
    std::fstream file(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-1, std::ios::end);
    file.put('!');
  }
  BuildShare& two = worker("two");
  EXPECT_EQ(two.fetch_missing(three, BuildTier::kOptimised), BuildShare::Got::kCompile);
  EXPECT_EQ(two.refused(), 1);
  EXPECT_FALSE(cached("two", three));
}

TEST_F(BuildShareTest, AServerThatDoesNotAnswerCostsTheBoundAtMost) {
  const ProgramVariant three = variant_with_dims(*program_, 3);
  answer_ = false;
  BuildShare& two = worker("two", std::chrono::milliseconds(200));
  const auto t0 = SteadyClock::now();
  EXPECT_EQ(two.fetch_missing(three, BuildTier::kOptimised), BuildShare::Got::kCompile);
  const double ms = ms_since(t0);
  EXPECT_GE(ms, 150);
  EXPECT_LT(ms, 2000);
  two.set_connected(false);  // not connected: not asked at all
  const auto t1 = SteadyClock::now();
  EXPECT_EQ(two.fetch_missing(three, BuildTier::kOptimised), BuildShare::Got::kCompile);
  EXPECT_LT(ms_since(t1), 100);
}

}  // namespace
}  // namespace lizard
