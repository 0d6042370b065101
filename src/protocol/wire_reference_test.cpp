// docs/wire-protocol.md is what wire_reference_markdown() writes from the
// schemas; LIZARD_WRITE_DOCS=1 writes it anew.
#include "protocol/wire_reference.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace lizard {
namespace {

TEST(WireReference, PageIsCurrent) {
  const std::string path = std::string(LIZARD_SOURCE_DIR) + "/docs/wire-protocol.md";
  const std::string page = wire_reference_markdown();
  if (const char* w = std::getenv("LIZARD_WRITE_DOCS"); w && std::string(w) == "1") {
    std::ofstream(path, std::ios::binary) << page;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream on_disk;
  on_disk << in.rdbuf();
  EXPECT_EQ(on_disk.str(), page)
      << path << " is not what the message schemas say; write it anew with\n"
      << "  LIZARD_WRITE_DOCS=1 build/tests/lizard_unit_tests --gtest_filter='WireReference.*'";
}

TEST(WireReference, NamesEveryMessageAndField) {
  const std::string page = wire_reference_markdown();
  for (const char* s :
       {"### run_ready", "`compile_cache_hit`", "`missing`", "`file_bytes_kept`", "`utilization`",
        "`launch_delay_us`", "`fold_ms`", "### drop_rows", "missing required field"})
    EXPECT_NE(page.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace lizard
