// IterationStep without sockets or hook processes: partials folded in the
// order given (a float sum shows it), the aggregate hook after each fold
// where the program has custom reducers, the update hook once per
// iteration, and the stop rule at the cap and by the program's condition.
#include "hooks/iteration_step.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "program/bundle.h"

namespace lizard {
namespace {

constexpr const char* kBuiltIn = R"(info: {name: step}
sources: {cuda: kernel.cu}
dataset: {x: {type: float64, shape: [rows]}}
state: {total: {type: float64}}
aggregate:
  sum:     {type: float64, reduce: sum}
  biggest: {type: int32, reduce: max}
iterate: [k]
)";

constexpr const char* kCustom = R"(info: {name: step}
sources: {cuda: kernel.cu}
dataset: {x: {type: float64, shape: [rows]}}
state: {total: {type: float64}}
aggregate:
  sum:  {type: float64, reduce: sum}
  best: {type: float64, reduce: custom}
iterate: [k]
)";

Manifest manifest_of(const char* config) {
  ProgramBundle b;
  b.config = config;
  b.sources["kernel.cu"] = "";
  auto image = make_program_image(b);
  EXPECT_TRUE(image.ok()) << image.status().message();
  return image.ok() ? image->manifest : Manifest{};
}

double get(const SectionBuffer& s, const char* name) {
  double v;
  std::memcpy(&v, s.data(*s.find(name)), sizeof v);
  return v;
}
void set(SectionBuffer* s, const char* name, double v) {
  std::memcpy(s->data(*s->find(name)), &v, sizeof v);
}

// Hooks that note each call: `aggregate` keeps the largest `best`,
// `update_state` adds the sum to the state's total and says done once the
// total reaches `done_at`.
class NotingHooks : public IterationHooks {
 public:
  explicit NotingHooks(double done_at = 1e300) : done_at_(done_at) {}
  Status aggregate(SectionBuffer* running, const SectionBuffer& partial,
                   int64_t iteration) override {
    calls.push_back("aggregate " + std::to_string(iteration) + " running sum " +
                    std::to_string(get(*running, "sum")));
    set(running, "best", std::max(get(*running, "best"), get(partial, "best")));
    return Status::Ok();
  }
  Result<bool> update_state(const SectionBuffer& agg, SectionBuffer* state,
                            int64_t iteration) override {
    calls.push_back("update " + std::to_string(iteration));
    if (!fail.empty()) return runtime_error(fail);
    set(state, "total", get(*state, "total") + get(agg, "sum"));
    return get(*state, "total") >= done_at_;
  }
  std::vector<std::string> calls;
  std::string fail;

 private:
  double done_at_;
};

class IterationStepTest : public ::testing::Test {
 protected:
  void use(const char* config) {
    m_ = manifest_of(config);
    params_ = bind_params(m_, nlohmann::json::object()).value();
    agg_ = make_section(m_.aggregate, m_, params_).value();
    state_ = make_section(m_.state, m_, params_).value();
  }
  SectionBuffer partial(double sum) {
    SectionBuffer p = make_section(m_.aggregate, m_, params_).value();
    set(&p, "sum", sum);
    return p;
  }
  IterationStep step(IterationHooks* hooks, int64_t max_iterations) {
    return IterationStep::make(m_, params_, hooks, max_iterations).value();
  }

  Manifest m_;
  ParamValues params_;
  SectionBuffer agg_, state_;
};

TEST_F(IterationStepTest, FoldsThePartialsInTheOrderGiven) {
  use(kBuiltIn);
  // 1e16 + 1 is 1e16 in doubles: the sum tells the order apart.
  SectionBuffer a = partial(1e16), b = partial(1.0), c = partial(-1e16);
  IterationStep s = step(nullptr, 10);
  set(&agg_, "sum", 42);  // left from an earlier iteration: start() resets it
  ASSERT_TRUE(s.run({&a, &b, &c}, &agg_, &state_, 0).ok());
  EXPECT_EQ(get(agg_, "sum"), 0.0);
  ASSERT_TRUE(s.run({&a, &c, &b}, &agg_, &state_, 1).ok());
  EXPECT_EQ(get(agg_, "sum"), 1.0);
}

TEST_F(IterationStepTest, FoldsPackedPartialsLikeSeparateOnes) {
  use(kBuiltIn);
  SectionBuffer a = partial(1e16), b = partial(1.0), c = partial(-1e16);
  int32_t big = 7;
  std::memcpy(b.data(*b.find("biggest")), &big, sizeof big);
  std::string packed;
  for (const SectionBuffer* p : {&a, &b, &c})
    packed.append(reinterpret_cast<const char*>(p->bytes.data()), p->bytes.size());
  IterationStep s = step(nullptr, 10);
  SectionBuffer one_by_one = agg_;
  s.start(&one_by_one);
  for (const SectionBuffer* p : {&a, &b, &c}) ASSERT_TRUE(s.fold(&one_by_one, *p, 0).ok());
  s.start(&agg_);
  ASSERT_TRUE(s.fold_packed(&agg_, packed, 0).ok());
  EXPECT_EQ(agg_.bytes, one_by_one.bytes);  // bit for bit
  int32_t folded_big;
  std::memcpy(&folded_big, agg_.data(*agg_.find("biggest")), sizeof folded_big);
  EXPECT_EQ(folded_big, 7);
  Status short_reply = s.fold_packed(&agg_, std::string_view(packed).substr(1), 0);
  EXPECT_FALSE(short_reply.ok());
  EXPECT_NE(short_reply.message().find("expected a multiple of"), std::string::npos);
}

TEST_F(IterationStepTest, CustomReducersFoldThroughTheAggregateHookAfterEachPartial) {
  use(kCustom);
  NotingHooks hooks;
  SectionBuffer a = partial(1), b = partial(2);
  set(&a, "best", 5);
  set(&b, "best", 3);
  IterationStep s = step(&hooks, 10);
  auto stop = s.run({&a, &b}, &agg_, &state_, 4);
  ASSERT_TRUE(stop.ok()) << stop.status().message();
  EXPECT_FALSE(*stop);
  // The built-in fields are folded before the hook sees each partial.
  EXPECT_EQ(hooks.calls,
            (std::vector<std::string>{"aggregate 4 running sum 1.000000",
                                      "aggregate 4 running sum 3.000000", "update 4"}));
  EXPECT_EQ(get(agg_, "best"), 5.0);
  EXPECT_EQ(get(state_, "total"), 3.0);
}

TEST_F(IterationStepTest, BuiltInReducersNeverCallTheAggregateHook) {
  use(kBuiltIn);
  NotingHooks hooks;
  SectionBuffer a = partial(1), b = partial(2);
  ASSERT_TRUE(step(&hooks, 10).run({&a, &b}, &agg_, &state_, 0).ok());
  EXPECT_EQ(hooks.calls, std::vector<std::string>{"update 0"});
}

TEST_F(IterationStepTest, StopsAtTheCapEvenWhenTheProgramGoesOn) {
  use(kBuiltIn);
  NotingHooks hooks;
  SectionBuffer a = partial(1);
  IterationStep s = step(&hooks, 3);
  EXPECT_FALSE(s.run({&a}, &agg_, &state_, 0).value());
  EXPECT_FALSE(s.run({&a}, &agg_, &state_, 1).value());
  EXPECT_TRUE(s.run({&a}, &agg_, &state_, 2).value());  // the third of 3
  EXPECT_EQ(hooks.calls.size(), 3u);
  EXPECT_TRUE(s.stops_after(5, false));  // resumed past the cap
}

TEST_F(IterationStepTest, StopsWhenTheProgramSaysDone) {
  use(kBuiltIn);
  NotingHooks hooks(/*done_at=*/2.0);
  SectionBuffer a = partial(1);
  IterationStep s = step(&hooks, 100);
  EXPECT_FALSE(s.run({&a}, &agg_, &state_, 0).value());
  EXPECT_TRUE(s.run({&a}, &agg_, &state_, 1).value());
  EXPECT_EQ(get(state_, "total"), 2.0);
}

TEST_F(IterationStepTest, WithoutHooksARunIsOneIteration) {
  use(kBuiltIn);
  SectionBuffer a = partial(1);
  EXPECT_TRUE(step(nullptr, 100).run({&a}, &agg_, &state_, 0).value());
  EXPECT_EQ(get(state_, "total"), 0.0);  // no hook: the state stays
}

TEST_F(IterationStepTest, AHookErrorIsTheStepsError) {
  use(kBuiltIn);
  NotingHooks hooks;
  hooks.fail = "host hook update_global_state crashed";
  SectionBuffer a = partial(1);
  auto stop = step(&hooks, 100).run({&a}, &agg_, &state_, 0);
  ASSERT_FALSE(stop.ok());
  EXPECT_EQ(stop.status().message(), "host hook update_global_state crashed");
}

}  // namespace
}  // namespace lizard
