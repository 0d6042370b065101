// The main of the module test binaries whose tests start hook processes:
// gtest's, except that `lizard_<module>_tests hook-host LIB.so` serves a
// program's hooks as `lizard hook-host` does, since hook processes are
// started from the running binary (hooks/hook_process.h).
#include <gtest/gtest.h>

#include "hooks/hook_host.h"

int main(int argc, char** argv) {
  if (auto status = lizard::hook_host_command(argc, argv)) return *status;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
