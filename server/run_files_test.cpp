#include "server/run_files.h"

#include <gtest/gtest.h>

#include "dataset/test_files.h"

namespace lizard {
namespace {

TEST(RunFiles, PinsSurviveTheRecordAndAChangedFileFailsTheirCheck) {
  TempDir dir;
  const std::string path = dir.write("x.npy", std::string(16, 'a'));
  const std::vector<PinnedFile> pins = {{"x", path, FileIdentity::of(path).value()}};
  const nlohmann::json record = {{"status", "running"}, {"files", pinned_files_json(pins)}};
  auto back = pinned_files_of(nlohmann::json::parse(record.dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].field, "x");
  EXPECT_EQ((*back)[0].path, path);
  EXPECT_EQ((*back)[0].identity, pins[0].identity);
  EXPECT_TRUE(check_files_unchanged(*back).ok());
  EXPECT_TRUE(check_same_versions(*back, pins).ok());

  dir.write("x.npy", std::string(24, 'b'));
  Status st = check_files_unchanged(*back);
  EXPECT_EQ(st.code(), Code::kConflict);
  EXPECT_EQ(
      st.message().rfind(
          "dataset field 'x': " + path + " changed since the run first read it: size 16 -> 24", 0),
      0u)
      << st.message();
  const std::vector<PinnedFile> now = {{"x", path, FileIdentity::of(path).value()}};
  EXPECT_EQ(check_same_versions(*back, now).code(), Code::kConflict);
}

TEST(RunFiles, ARecordOfAServerThatPinnedNothingHasNoPins) {
  auto none = pinned_files_of({{"status", "running"}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(pinned_files_of({{"files", {{{"field", "x"}}}}}).ok());
}

}  // namespace
}  // namespace lizard
