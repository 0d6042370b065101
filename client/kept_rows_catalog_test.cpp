// What a worker notes of the rows its executors keep: the description,
// bytes, source and range of each key, the keys of one source (to drop
// them), and nothing of keys no executor keeps any more.
#include "client/kept_rows_catalog.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

TEST(KeptRowsCatalog, DescribesKeysAndFindsThoseOfASource) {
  KeptRowsCatalog c;
  FileRowsKey file{{1, 2, 800, 9}, "/d/x.npy", FileFormat::kNpy, DType::kFloat64, 2, 10, 40, ""};
  c.note(file);
  c.note({"u1:0+4x8@0+32", "upload u1 rows 0..4", 32, "u1", 0, 4});
  c.note("other", "rows of no known source", 8);
  auto described = c.describe({file.key(), "u1:0+4x8@0+32", "unnoted"});
  ASSERT_EQ(described.size(), 3u);
  EXPECT_EQ(described[0].source, "/d/x.npy");
  EXPECT_EQ(described[0].first_row, 10);
  EXPECT_EQ(described[0].rows, 40);
  EXPECT_EQ(described[0].bytes, 40u * 2 * 8);
  EXPECT_EQ(described[0].description, file.description());
  EXPECT_EQ(described[1].source, "u1");
  EXPECT_EQ(described[2].description, "unnoted");
  EXPECT_EQ(described[2].bytes, 0u);
  EXPECT_EQ(c.keys_of("/d/x.npy"), std::set<std::string>{file.key()});
  EXPECT_EQ(c.keys_of("u1"), std::set<std::string>{"u1:0+4x8@0+32"});
  EXPECT_TRUE(c.keys_of("/d/y.npy").empty());
  c.retain({"u1:0+4x8@0+32"}, c.generation());
  EXPECT_TRUE(c.keys_of("/d/x.npy").empty());
  EXPECT_EQ(c.keys_of("u1").size(), 1u);
}

// The worker reads its executors' keys, a run keeps new rows and notes
// them, then the worker retains what it read: the new key stays, so that a
// drop by its source still finds it (it was lost, and the rows stayed kept).
TEST(KeptRowsCatalog, AKeyNotedAfterTheExecutorsWereReadIsKept) {
  KeptRowsCatalog c;
  c.note({"u1:0+4x8@0+32", "upload u1 rows 0..4", 128, "u1", 0, 4});
  const uint64_t mark = c.generation();
  const std::set<std::string> read_before = {};  // the executor kept nothing yet
  c.note({"u2:0+4x8@0+32", "upload u2 rows 0..4", 128, "u2", 0, 4});
  c.retain(read_before, mark);
  EXPECT_TRUE(c.keys_of("u1").empty()) << "a key noted before the read and not kept stays";
  EXPECT_EQ(c.keys_of("u2"), std::set<std::string>{"u2:0+4x8@0+32"});
  c.retain({}, c.generation());
  EXPECT_TRUE(c.keys_of("u2").empty());
}

}  // namespace
}  // namespace lizard
