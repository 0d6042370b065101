#include "program/bundle.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

ProgramBundle bundle() {
  ProgramBundle b;
  b.config =
      "sources: {cuda: kernel.cu, headers: [util.cuh]}\ndataset: {x: {type: float32, shape: "
      "[rows]}}\n"
      "iterate: [run]\n";
  b.sources = {{"kernel.cu", "// kernel"}, {"util.cuh", "// util"}};
  return b;
}

TEST(Bundle, ChecksumIsStableAndSensitiveToEveryFile) {
  ProgramBundle a = bundle();
  const std::string h = bundle_checksum(a);
  EXPECT_EQ(h.size(), 64u);
  EXPECT_EQ(h, bundle_checksum(bundle()));
  ProgramBundle b = bundle();
  b.sources["util.cuh"] += " ";
  EXPECT_NE(bundle_checksum(b), h);
  ProgramBundle c = bundle();
  c.config += "\n";
  EXPECT_NE(bundle_checksum(c), h);
  // Moving bytes between a name and its content changes the checksum.
  ProgramBundle d = bundle();
  d.sources = {{"kernel.c", "u// kernel"}, {"util.cuh", "// util"}};
  EXPECT_NE(bundle_checksum(d), h);
}

TEST(Bundle, JsonRoundTripAndImage) {
  auto back = ProgramBundle::from_json(bundle().to_json());
  ASSERT_TRUE(back.ok());
  auto img = make_program_image(back.value());
  ASSERT_TRUE(img.ok()) << img.status().message();
  EXPECT_EQ(img->hash, bundle_checksum(bundle()));
  EXPECT_NE(img->header.find("dataset_t"), std::string::npos);
}

TEST(Bundle, MissingOrExtraSourcesAreErrors) {
  ProgramBundle b = bundle();
  b.sources.erase("util.cuh");
  EXPECT_NE(make_program_image(b).status().message().find("'util.cuh' is listed but was not sent"),
            std::string::npos);
  ProgramBundle c = bundle();
  c.sources["stray.h"] = "";
  EXPECT_NE(make_program_image(c).status().message().find("does not list it"), std::string::npos);
  EXPECT_FALSE(ProgramBundle::from_json(nlohmann::json::array()).ok());
  EXPECT_FALSE(ProgramBundle::from_json({{"config", 1}}).ok());
  EXPECT_FALSE(ProgramBundle::from_json({{"config", "x"}, {"sources", {{"a", 1}}}}).ok());
}

}  // namespace
}  // namespace lizard
