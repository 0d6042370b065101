#include "server/run_files.h"

#include <gtest/gtest.h>

#include "common/sha256.h"
#include "dataset/test_files.h"

namespace lizard {
namespace {

TEST(RunFiles, PinsSurviveTheRecordAndAChangedFileFailsTheirCheck) {
  TempDir dir;
  const std::string path = dir.write("x.npy", std::string(16, 'a'));
  const std::vector<PinnedFile> pins = {{"x", path, FileIdentity::of(path).value(), ""}};
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
  const std::vector<PinnedFile> now = {{"x", path, FileIdentity::of(path).value(), ""}};
  EXPECT_EQ(check_same_versions(*back, now).code(), Code::kConflict);
}

// A content digest is stored with the record, so a restarted server checks
// the bytes too; new bytes under an unmoved identity fail both checks.
TEST(RunFiles, AContentPinSurvivesTheRecordAndNewBytesFailItsChecks) {
  TempDir dir;
  const std::string path = dir.write("x.npy", std::string(16, 'a'));
  const std::vector<PinnedFile> pins = {
      {"x", path, FileIdentity::of(path).value(), sha256_hex(std::string(16, 'a'))}};
  auto back = pinned_files_of(nlohmann::json{{"files", pinned_files_json(pins)}});
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].content_sha256, pins[0].content_sha256);
  EXPECT_TRUE(check_files_unchanged(*back).ok());
  EXPECT_TRUE(check_contents_unchanged(*back).ok());

  dir.write("x.npy", std::string(16, 'b'));
  // What a write through a mapping on tmpfs leaves: the same identity.
  std::vector<PinnedFile> same_identity = *back;
  same_identity[0].identity = FileIdentity::of(path).value();
  for (const Status& st : {check_contents_unchanged(*back), check_files_unchanged(same_identity)}) {
    EXPECT_EQ(st.code(), Code::kConflict);
    EXPECT_EQ(
        st.message().rfind(
            "dataset field 'x': " + path + " changed since the run first read it: its content", 0),
        0u)
        << st.message();
  }
}

TEST(RunFiles, ARecordOfAServerThatPinnedNothingHasNoPins) {
  auto none = pinned_files_of({{"status", "running"}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(pinned_files_of({{"files", {{{"field", "x"}}}}}).ok());
}

}  // namespace
}  // namespace lizard
