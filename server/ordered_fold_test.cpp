#include "server/ordered_fold.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace lizard {
namespace {

// A result is folded as soon as every result before it has been, and not
// before: what arrived ahead of its turn waits for the gap to fill.
TEST(OrderedFold, FoldsEachResultOnceThoseBeforeItAre) {
  OrderedFold order;
  order.start(4);
  std::vector<size_t> folded;
  auto fold = [&](size_t k) {
    folded.push_back(k);
    return Status::Ok();
  };
  ASSERT_TRUE(order.arrived(2, fold).ok());
  EXPECT_TRUE(folded.empty());
  ASSERT_TRUE(order.arrived(0, fold).ok());
  EXPECT_EQ(folded, (std::vector<size_t>{0}));
  ASSERT_TRUE(order.arrived(1, fold).ok());
  EXPECT_EQ(folded, (std::vector<size_t>{0, 1, 2}));
  EXPECT_FALSE(order.done());
  ASSERT_TRUE(order.arrived(1, fold).ok());  // a second arrival is ignored
  ASSERT_TRUE(order.arrived(3, fold).ok());
  EXPECT_EQ(folded, (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_TRUE(order.done());
}

// A float sum depends on its order: whatever order 300 workers' results
// arrive in, the folded aggregate is bit for bit the one folded in worker
// order after the last arrival.
TEST(OrderedFold, AFloatSumIsTheSameBitsWhateverTheArrivalOrder) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1e6f, 1e6f);
  std::vector<float> results(300);
  for (float& v : results) v = value(rng);
  float in_order = 0;
  for (float v : results) in_order += v;

  std::vector<size_t> arrivals(results.size());
  std::iota(arrivals.begin(), arrivals.end(), 0);
  bool some_order_differs = false;  // the test could tell a wrong order apart
  for (int trial = 0; trial < 20; ++trial) {
    std::shuffle(arrivals.begin(), arrivals.end(), rng);
    float as_arrived = 0, ordered = 0;
    OrderedFold order;
    order.start(results.size());
    for (size_t k : arrivals) {
      as_arrived += results[k];
      ASSERT_TRUE(order
                      .arrived(k,
                               [&](size_t i) {
                                 ordered += results[i];
                                 return Status::Ok();
                               })
                      .ok());
    }
    EXPECT_TRUE(order.done());
    EXPECT_EQ(std::memcmp(&ordered, &in_order, sizeof(float)), 0);
    some_order_differs |= std::memcmp(&as_arrived, &in_order, sizeof(float)) != 0;
  }
  EXPECT_TRUE(some_order_differs);
}

// A fold that fails stops the folding there, and its error is returned.
TEST(OrderedFold, TheFirstFailingFoldStopsIt) {
  OrderedFold order;
  order.start(3);
  auto fold = [&](size_t k) {
    return k == 1 ? internal_error("worker 1 sent an aggregate of 3 bytes") : Status::Ok();
  };
  ASSERT_TRUE(order.arrived(1, fold).ok());
  Status st = order.arrived(0, fold);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("worker 1"), std::string::npos);
  EXPECT_EQ(order.folded(), 1u);
  EXPECT_FALSE(order.done());
}

}  // namespace
}  // namespace lizard
