// The unit tests' count of heap allocations (operator new, in every thread
// of the test process), for the tests that hold a path to allocating
// nothing: an iteration's, once its buffers have grown.
//
//   const uint64_t before = lizard::testing::allocations();
//   run_iterations();
//   EXPECT_EQ(lizard::testing::allocations() - before, 0u);
#pragma once

#include <cstdint>

namespace lizard::testing {

uint64_t allocations();

}  // namespace lizard::testing
