#include "dataset/file_format.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

TEST(DatasetFileFormat, ParsesEveryName) {
  for (FileFormat f : {FileFormat::kNpy, FileFormat::kRaw, FileFormat::kCsv, FileFormat::kText,
                       FileFormat::kLizard}) {
    auto parsed = parse_file_format(file_format_name(f));
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(*parsed, f);
  }
}

TEST(DatasetFileFormat, UnknownNameListsTheChoices) {
  auto parsed = parse_file_format("parquet");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "unknown file format 'parquet' (expected one of: npy, raw, csv, text, lizard)");
}

TEST(DatasetFileFormat, InfersFromTheExtension) {
  EXPECT_EQ(file_format_from_path("/data/points.npy"), FileFormat::kNpy);
  EXPECT_EQ(file_format_from_path("/data/points.NPY"), FileFormat::kNpy);
  EXPECT_EQ(file_format_from_path("points.csv"), FileFormat::kCsv);
  EXPECT_EQ(file_format_from_path("points.txt"), FileFormat::kText);
  EXPECT_EQ(file_format_from_path("points.bin"), FileFormat::kRaw);
  EXPECT_EQ(file_format_from_path("points"), FileFormat::kRaw);
  EXPECT_EQ(file_format_from_path("/data.csv/points"), FileFormat::kRaw);
}

TEST(DatasetFileFormat, ResolvePrefersTheGivenName) {
  EXPECT_EQ(*resolve_file_format("lizard", "k.txt"), FileFormat::kLizard);
  EXPECT_EQ(*resolve_file_format("", "k.txt"), FileFormat::kText);
  EXPECT_FALSE(resolve_file_format("tsv", "k.txt").ok());
}

}  // namespace
}  // namespace lizard
