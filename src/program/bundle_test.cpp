#include "program/bundle.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dataset/test_files.h"

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

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(Bundle, ReadingADirectoryRefusesSymlinksLeadingOutOfIt) {
  namespace fs = std::filesystem;
  TempDir outside, dir;
  write_file(outside.path() + "/secret", "the secret text");
  write_file(dir.path() + "/config.yaml",
             "sources: {cuda: kernel.cu, headers: [inc/util.cuh]}\niterate: [run]\n");
  fs::create_directories(dir.path() + "/inc");
  fs::create_directories(dir.path() + "/src");
  write_file(dir.path() + "/src/kernel.cu", "// kernel");
  write_file(dir.path() + "/inc/util.cuh", "// util");
  // A symlink that stays inside the directory is fine.
  fs::create_symlink("src/kernel.cu", dir.path() + "/kernel.cu");
  auto ok = read_program_dir(dir.path());
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->sources["kernel.cu"], "// kernel");

  fs::remove(dir.path() + "/kernel.cu");
  fs::create_symlink(outside.path() + "/secret", dir.path() + "/kernel.cu");
  auto out = read_program_dir(dir.path());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            dir.path() + "/config.yaml: sources: kernel.cu: " + dir.path() +
                "/kernel.cu is a symlink that leads outside the program directory");
  EXPECT_EQ(out.status().message().find("secret text"), std::string::npos);

  // Through a linked directory, or ../ in a link, just the same.
  fs::remove(dir.path() + "/kernel.cu");
  fs::create_symlink("src/kernel.cu", dir.path() + "/kernel.cu");
  fs::remove_all(dir.path() + "/inc");
  fs::create_directory_symlink(outside.path(), dir.path() + "/inc");
  write_file(outside.path() + "/util.cuh", "// outside");
  EXPECT_NE(read_program_dir(dir.path()).status().message().find("leads outside"),
            std::string::npos);
  fs::remove(dir.path() + "/inc");
  fs::create_directories(dir.path() + "/inc");
  fs::create_symlink("../../" + fs::path(outside.path()).filename().string() + "/util.cuh",
                     dir.path() + "/inc/util.cuh");
  EXPECT_NE(read_program_dir(dir.path()).status().message().find("leads outside"),
            std::string::npos);

  // config.yaml itself.
  fs::remove(dir.path() + "/config.yaml");
  fs::create_symlink(outside.path() + "/secret", dir.path() + "/config.yaml");
  auto config = read_program_dir(dir.path());
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("config.yaml is a symlink that leads outside"),
            std::string::npos)
      << config.status().message();
  EXPECT_EQ(config.status().message().find("secret text"), std::string::npos);
}

}  // namespace
}  // namespace lizard
