// Test helpers: a temporary directory removed at the end of the test, and
// writing a file's bytes into it.
//
//   TempDir dir;
//   std::string path = dir.write("points.csv", "1,2\n3,4\n");
//   DatasetStore store(dir.path());           // the directory itself
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace lizard {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lizard-test-XXXXXX").string();
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr) << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string path(const std::string& name) const { return path_ + "/" + name; }

  // Writes `bytes` to the file `name` and returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(out.good()) << "cannot write " << p;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace lizard
