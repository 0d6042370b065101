// Comparing run results that come from floating-point reductions: on a GPU
// the order of atomic additions varies between runs, so two runs of the same
// request agree to rounding, not bit for bit.
//
//   expect_numbers_close(got["result"], want["result"], 1e-5, "result");
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

namespace lizard {

// Compares every number of two JSON values (relative tolerance `rel`).
inline void expect_numbers_close(const nlohmann::json& a, const nlohmann::json& b, double rel,
                                 const std::string& where) {
  ASSERT_EQ(a.is_number(), b.is_number()) << where;
  if (a.is_number()) {
    double x = a.get<double>(), y = b.get<double>();
    EXPECT_NEAR(x, y, rel * std::max(1.0, std::max(std::fabs(x), std::fabs(y)))) << where;
  } else if (a.is_array()) {
    ASSERT_TRUE(b.is_array()) << where;
    ASSERT_EQ(a.size(), b.size()) << where;
    for (size_t i = 0; i < a.size(); ++i)
      expect_numbers_close(a[i], b[i], rel, where + "[" + std::to_string(i) + "]");
  } else if (a.is_object()) {
    ASSERT_TRUE(b.is_object()) << where;
    for (const auto& [k, v] : a.items()) {
      ASSERT_TRUE(b.contains(k)) << where << "." << k;
      expect_numbers_close(v, b[k], rel, where + "." + k);
    }
  } else {
    EXPECT_EQ(a, b) << where;
  }
}

}  // namespace lizard
