// `lizard datasets` and `lizard stage` output: tables of uploads and kept
// rows with readable sizes, what a stage put where, and upload ids told
// from paths.
#include "cli/dataset_views.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

using nlohmann::json;

TEST(DatasetViews, ListsUploadsAndKeptRows) {
  json datasets = {{"uploads",
                    {{{"id", "u3c1f0e9a7b52"},
                      {"format", "npy"},
                      {"dtype", "float32"},
                      {"shape", {1000, 8}},
                      {"bytes", 32128}}}},
                   {"kept",
                    {{{"worker", "w1"},
                      {"executor", 0},
                      {"source", "/data/x.npy"},
                      {"rows", {0, 500}},
                      {"bytes", 3 << 20},
                      {"in_use", true}},
                     {{"worker", "w2"},
                      {"executor", 1},
                      {"source", "u3c1f0e9a7b52"},
                      {"rows", {500, 1000}},
                      {"bytes", 16000},
                      {"in_use", false}}}}};
  EXPECT_EQ(datasets_view(datasets),
            "UPLOAD         FORMAT  DTYPE    SHAPE   SIZE\n"
            "u3c1f0e9a7b52  npy     float32  1000x8  31.4 KiB\n"
            "\n"
            "WORKER  EXECUTOR  SOURCE         ROWS       SIZE      IN USE\n"
            "w1      0         /data/x.npy    0..500     3.0 MiB   yes\n"
            "w2      1         u3c1f0e9a7b52  500..1000  15.6 KiB  no\n"
            "kept rows: 3.0 MiB in all\n");
}

TEST(DatasetViews, SaysWhenThereIsNothing) {
  EXPECT_EQ(datasets_view({{"uploads", json::array()}, {"kept", json::array()}}),
            "no uploads\n\nno kept rows\n");
  EXPECT_EQ(datasets_view(json::array()), "no uploads\n\nno kept rows\n");  // an older server
}

TEST(DatasetViews, ShowsWhatAStagePutWhere) {
  json staged = {{"path", "/data/x.npy"},
                 {"format", "npy"},
                 {"dtype", "float64"},
                 {"width", 2},
                 {"rows", 4000},
                 {"bytes", 64000},
                 {"executors",
                  {{{"worker", "w1"},
                    {"executor", 0},
                    {"rows", {0, 4000}},
                    {"bytes", 64000},
                    {"was_kept", false}}}}};
  EXPECT_EQ(staged_view(staged),
            "staged /data/x.npy (npy, 4000 rows of 2 float64), 62.5 KiB\n"
            "WORKER  EXECUTOR  ROWS     SIZE      LOADED\n"
            "w1      0         0..4000  62.5 KiB  now\n");
}

TEST(DatasetViews, AnUploadSaysHowRunsNameIt) {
  json stored = {{"id", "u3c1f0e9a7b52"}, {"format", "npy"}, {"dtype", "float32"},
                 {"shape", {30000, 2}},   {"bytes", 240128}, {"receive_bytes_per_s", 1.5e9}};
  EXPECT_EQ(uploaded_view(stored),
            "uploaded u3c1f0e9a7b52 (npy float32 30000x2, 234.5 KiB at 1.50 GB/s); runs take "
            "it as --dataset NAME=upload:u3c1f0e9a7b52 until `lizard datasets rm "
            "u3c1f0e9a7b52`\n");
}

TEST(DatasetViews, ToldUploadIdsFromPaths) {
  EXPECT_TRUE(looks_like_upload_id("u3c1f0e9a7b52"));
  EXPECT_FALSE(looks_like_upload_id("u3C1f0e9a7b52"));
  EXPECT_FALSE(looks_like_upload_id("/data/u3c1f0e9a7b52"));
  EXPECT_FALSE(looks_like_upload_id("u3c1f0e9a7b5"));
}

}  // namespace
}  // namespace lizard
