#include "exec/cpu/kept_host_rows.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

namespace lizard {
namespace {

// Each run's view holds the kept rows; what a run writes stays in its view.
TEST(KeptHostRows, EachRunSeesTheKeptRowsAndItsWritesStayItsOwn) {
  std::vector<uint8_t> rows(3 << 20);
  std::iota(rows.begin(), rows.end(), 0);
  auto kept = KeptHostRows::make(rows.size(), [&](uint8_t* to) {
    std::memcpy(to, rows.data(), rows.size());
    return Status::Ok();
  });
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ(kept->size(), rows.size());
  auto first = kept->view_for_run();
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(first->size(), rows.size());
  EXPECT_EQ(std::memcmp(first->data(), rows.data(), rows.size()), 0);
  std::memset(first->data(), 0xff, first->size());  // a kernel writing into its input rows
  auto second = kept->view_for_run();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(std::memcmp(second->data(), rows.data(), rows.size()), 0);
  // The rows outlive the kept copy's own handle while a run maps them.
  KeptHostRows moved = std::move(kept).value();
  { KeptHostRows gone = std::move(moved); }
  EXPECT_EQ(std::memcmp(second->data(), rows.data(), rows.size()), 0);
}

TEST(KeptHostRows, EmptyRowsAndAFailedFill) {
  auto empty = KeptHostRows::make(0, [](uint8_t*) { return Status::Ok(); });
  ASSERT_TRUE(empty.ok());
  auto view = empty->view_for_run();
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->data(), nullptr);
  auto failed = KeptHostRows::make(4096, [](uint8_t*) { return not_found("the file went"); });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "the file went");
}

}  // namespace
}  // namespace lizard
