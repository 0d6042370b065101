// KmeansBlobs: well-separated k-means blobs written as a .npy file, with the
// run request over them, for the tests across namespace hosts.  Every point
// lies near the centre of its cluster, so the counts per cluster are exact
// whatever the plan, and the centroids agree to float rounding.
//
//   KmeansBlobs blobs(dir + "/data", 1000000);
//   json body = blobs.request({{"path", blobs.path}}, 12);
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "dataset/npy.h"

namespace lizard {

struct KmeansBlobs {
  static constexpr int kK = 8, kDims = 4;

  KmeansBlobs(const std::string& dir, int64_t rows) : rows(rows) {
    std::filesystem::create_directories(dir);
    std::mt19937 rng(7);
    std::normal_distribution<float> noise(0.f, 0.3f);
    std::vector<float> pts(static_cast<size_t>(rows) * kDims);
    for (int64_t i = 0; i < rows; ++i)
      for (int j = 0; j < kDims; ++j)
        pts[static_cast<size_t>(i * kDims + j)] =
            10.f * ((i % kK >> j) & 1) + 3.f * static_cast<float>(i % kK) + noise(rng);
    path = dir + "/points.npy";
    std::ofstream(path, std::ios::binary) << npy_bytes(DType::kFloat32, {rows, kDims}, pts.data());
    init.assign(pts.begin(), pts.begin() + kK * kDims);
  }

  // A run of exactly `iterations` iterations over `source` ({"path": ...} or {"upload": id}).
  nlohmann::json request(const nlohmann::json& source, int iterations) const {
    return {
        {"params", {{"k", kK}, {"dims", kDims}, {"max_iterations", iterations}, {"threshold", -1}}},
        {"dataset", {{"points", source}}},
        {"state", {{"centroids", init}}}};
  }

  // Each cluster holds rows / k points.
  nlohmann::json counts() const { return std::vector<int64_t>(kK, rows / kK); }

  int64_t rows;
  std::string path;
  std::vector<float> init;
};

}  // namespace lizard
