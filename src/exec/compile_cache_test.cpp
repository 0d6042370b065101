// The host's compile cache: shared by processes, kept across restarts,
// single-flight, bounded, and never serving a corrupt entry.
#include "exec/compile_cache.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "exec/host_compiler.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("lizard-compile-cache-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  CompileCache cache(uint64_t max_bytes = CompileCache::kDefaultMaxBytes) const {
    return CompileCache(dir_.string(), max_bytes);
  }
  // A compile function that returns `payload` and counts its calls.
  std::function<Result<std::string>()> counted(const std::string& payload) {
    return [this, payload]() -> Result<std::string> {
      ++compiles_;
      return payload;
    };
  }
  // Runs `child` in a forked process; returns its exit code (or -signal).
  static pid_t fork_child(const std::function<int()>& child) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(child());
    return pid;
  }
  static int wait_child(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }

  fs::path dir_;
  int compiles_ = 0;
};

TEST_F(CompileCacheTest, AnotherProcessFindsTheEntry) {
  const pid_t child = fork_child([this] {
    auto e = cache().get_or_compile("k1", ".bin", [] { return Result<std::string>("cubin"); });
    return e.ok() && !e->hit ? 0 : 1;
  });
  ASSERT_EQ(wait_child(child), 0);
  auto e = cache().get_or_compile("k1", ".bin", counted("other"));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_TRUE(e->hit);
  EXPECT_EQ(e->payload, "cubin");
  EXPECT_EQ(compiles_, 0);
}

TEST_F(CompileCacheTest, ANewCacheOnTheSameDirectoryFindsTheEntry) {
  ASSERT_TRUE(cache().get_or_compile("k1", ".bin", counted("image")).ok());
  auto again = cache().get_or_compile("k1", ".bin", counted("image"));  // a restart
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->hit);
  EXPECT_EQ(again->payload, "image");
  EXPECT_EQ(compiles_, 1);
  EXPECT_EQ(read_text(again->path).substr(0, 5), "image");  // loadable in place
}

TEST_F(CompileCacheTest, ConcurrentCompilesOfOneKeyCompileOnce) {
  const fs::path count = dir_.string() + "-count";
  fs::remove(count);
  std::vector<pid_t> children;
  for (int i = 0; i < 3; ++i)
    children.push_back(fork_child([this, count] {
      auto e = cache().get_or_compile("k1", ".bin", [&count]() -> Result<std::string> {
        std::ofstream(count, std::ios::app) << "compiled\n";
        std::this_thread::sleep_for(300ms);  // long enough for the others to wait
        return std::string("image");
      });
      return e.ok() && e->payload == "image" ? 0 : 1;
    }));
  for (pid_t c : children) EXPECT_EQ(wait_child(c), 0);
  EXPECT_EQ(read_text(count), "compiled\n");
  fs::remove(count);
}

TEST_F(CompileCacheTest, ALockHeldByAProcessThatDiedIsReleased) {
  const pid_t child = fork_child([this] {
    auto e = cache().get_or_compile("k1", ".bin", []() -> Result<std::string> {
      ::kill(::getpid(), SIGKILL);  // dies holding the lock
      return std::string("never");
    });
    return 0;
  });
  ASSERT_EQ(wait_child(child), -SIGKILL);
  auto e = cache().get_or_compile("k1", ".bin", counted("image"));
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->hit);
  EXPECT_EQ(e->payload, "image");
}

TEST_F(CompileCacheTest, BeyondItsBoundTheLeastRecentlyUsedEntryGoes) {
  const std::string payload(1000, 'x');
  const uint64_t entry_bytes = 1000 + 48;  // payload and trailer
  CompileCache c = cache(entry_bytes * 3 + entry_bytes / 2);
  auto now = fs::file_time_type::clock::now();
  for (const char* key : {"a", "b", "c"})
    ASSERT_TRUE(c.get_or_compile(key, ".bin", counted(payload)).ok());
  fs::last_write_time(dir_ / "a.bin", now - 30s);
  fs::last_write_time(dir_ / "b.bin", now - 20s);
  fs::last_write_time(dir_ / "c.bin", now - 10s);
  ASSERT_TRUE(c.get_or_compile("a", ".bin", counted(payload))->hit);  // a: used last
  ASSERT_TRUE(c.get_or_compile("d", ".bin", counted(payload)).ok());
  EXPECT_TRUE(fs::exists(dir_ / "a.bin"));
  EXPECT_FALSE(fs::exists(dir_ / "b.bin"));
  EXPECT_TRUE(fs::exists(dir_ / "c.bin"));
  EXPECT_TRUE(fs::exists(dir_ / "d.bin"));
  compiles_ = 0;
  EXPECT_FALSE(c.get_or_compile("b", ".bin", counted(payload))->hit);
  EXPECT_EQ(compiles_, 1);
}

// Each owner's entries lie in a directory of their own, apart from another
// owner's entry of the same key, and one bound covers every owner: an
// owner's new entry evicts another owner's entry used longer ago.
TEST_F(CompileCacheTest, OwnersKeepTheirEntriesApartWithinOneBound) {
  const std::string a(64, 'a'), b(64, 'b');
  const std::string payload(1000, 'x');
  const uint64_t entry_bytes = 1000 + 48;
  CompileCache whole = cache(entry_bytes * 2 + entry_bytes / 2);
  CompileCache of_a = whole.owned_by(a), of_b = whole.owned_by(b);
  EXPECT_EQ(of_a.root(), whole.dir());
  ASSERT_TRUE(of_a.get_or_compile("k", ".bin", counted(payload)).ok());
  EXPECT_TRUE(fs::is_regular_file(dir_ / a / "k.bin"));
  EXPECT_FALSE(of_b.contains("k", ".bin"));
  EXPECT_FALSE(whole.contains("k", ".bin"));
  compiles_ = 0;
  ASSERT_FALSE(of_b.get_or_compile("k", ".bin", counted(payload))->hit);
  EXPECT_EQ(compiles_, 1);
  fs::last_write_time(dir_ / a / "k.bin", fs::file_time_type::clock::now() - 30s);
  ASSERT_TRUE(of_b.get_or_compile("j", ".bin", counted(payload)).ok());
  EXPECT_FALSE(fs::exists(dir_ / a / "k.bin"));  // the other owner's, used longest ago
  EXPECT_TRUE(fs::exists(dir_ / b / "k.bin"));
  EXPECT_TRUE(fs::exists(dir_ / b / "j.bin"));
}

TEST_F(CompileCacheTest, ACorruptOrPartialEntryIsCompiledAgainAndReplaced) {
  auto first = cache().get_or_compile("k1", ".bin", counted("the image"));
  ASSERT_TRUE(first.ok());
  std::string bytes = read_text(first->path);
  bytes[2] ^= 0x20;  // a flipped bit
  write_text(first->path, bytes);
  auto fixed = cache().get_or_compile("k1", ".bin", counted("the image"));
  ASSERT_TRUE(fixed.ok());
  EXPECT_FALSE(fixed->hit);
  EXPECT_EQ(fixed->payload, "the image");
  EXPECT_EQ(compiles_, 2);

  write_text(first->path, read_text(first->path).substr(0, 20));  // cut short
  auto again = cache().get_or_compile("k1", ".bin", counted("the image"));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->hit);
  EXPECT_EQ(compiles_, 3);
  EXPECT_TRUE(cache().get_or_compile("k1", ".bin", counted("the image"))->hit);
}

TEST_F(CompileCacheTest, AFailedCompileStoresNothing) {
  auto e = cache().get_or_compile("k1", ".bin",
                                  [] { return Result<std::string>(compile_error("bad kernel")); });
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kCompileError);
  EXPECT_FALSE(cache().get_or_compile("k1", ".bin", counted("image"))->hit);
}

// A build made on another host is put in as an entry of its own: the
// executors then read it as if compiled here; an entry already there stays.
TEST_F(CompileCacheTest, APutEntryIsReadAsACompiledOne) {
  EXPECT_EQ(cache().read("k1", ".so").status().code(), Code::kNotFound);
  bool stored = false;
  ASSERT_TRUE(cache().put("k1", ".so", "fetched image", &stored).ok());
  EXPECT_TRUE(stored);
  auto e = cache().get_or_compile("k1", ".so", counted("compiled image"));
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->hit);
  EXPECT_EQ(e->payload, "fetched image");
  EXPECT_EQ(compiles_, 0);
  ASSERT_TRUE(cache().put("k1", ".so", "another", &stored).ok());
  EXPECT_FALSE(stored);
  EXPECT_EQ(*cache().read("k1", ".so"), "fetched image");
  std::string bytes = read_text(e->path);
  bytes[0] ^= 0x20;
  write_text(e->path, bytes);
  EXPECT_EQ(cache().read("k1", ".so").status().code(), Code::kNotFound);  // checked on read
}

TEST(CompileKey, EveryFieldAndItsBoundaryCounts) {
  auto digest = [](std::string a, std::string b) { return CompileKey().add(a, b).digest(); };
  EXPECT_EQ(digest("version", "1"), digest("version", "1"));
  EXPECT_NE(digest("version", "1"), digest("version", "2"));
  EXPECT_NE(digest("ab", "c"), digest("a", "bc"));
}

// A host compiler whose --version says `version` and that otherwise runs c++.
void write_fake_compiler(const fs::path& path, const std::string& version) {
  write_text(path, "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '" + version +
                       "'; exit 0; fi\nexec c++ \"$@\"\n");
  fs::permissions(path, fs::perms::owner_all);
}

TEST_F(CompileCacheTest, ANewHostCompilerVersionMisses) {
  fs::create_directories(dir_);
  const fs::path cxx = dir_ / "cxx";
  const char* old = std::getenv("CXX");
  const std::string saved = old ? old : "";
  ::setenv("CXX", cxx.c_str(), 1);
  const std::map<std::string, std::string> files{{"a.cpp", "extern \"C\" int f() { return 1; }"}};
  write_fake_compiler(cxx, "fake 1.0");
  HostCompiler cc((dir_ / "kernels").string());
  bool cached = true;
  EXPECT_TRUE(cc.build_shared(files, {"a.cpp"}, {"-O0"}, &cached).ok());
  EXPECT_FALSE(cached);
  EXPECT_TRUE(cc.build_shared(files, {"a.cpp"}, {"-O0"}, &cached).ok());
  EXPECT_TRUE(cached);
  write_fake_compiler(cxx, "fake 2.0 (an upgrade)");
  fs::last_write_time(cxx, fs::file_time_type::clock::now() + 5s);
  auto lib = cc.build_shared(files, {"a.cpp"}, {"-O0"}, &cached);
  EXPECT_TRUE(lib.ok()) << lib.status().message();
  EXPECT_FALSE(cached);
  if (old)
    ::setenv("CXX", saved.c_str(), 1);
  else
    ::unsetenv("CXX");
}

// What f() of the library built from `unit` (which includes pre.h) returns.
int value_of(const HostCompiler& cc, const std::map<std::string, std::string>& files,
             const PrecompiledHeader& pch) {
  auto lib = cc.build_shared(files, {"a.cpp"}, {"-O0"}, nullptr, &pch);
  EXPECT_TRUE(lib.ok()) << lib.status().message();
  if (!lib.ok()) return -1;
  void* h = ::dlopen(lib->c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(h, nullptr) << ::dlerror();
  if (!h) return -1;
  auto f = reinterpret_cast<int (*)()>(::dlsym(h, "f"));
  const int v = f ? f() : -1;
  ::dlclose(h);
  return v;
}

// A header every build includes first is precompiled in the background once
// a process builds a second time without it; builds then read it; it
// serves only the inputs it was made from.
TEST_F(CompileCacheTest, APrecompiledHeaderIsMadeInTheBackgroundAndServesOnlyItsInputs) {
  const PrecompiledHeader pch{"pre.h", {"pre.h"}};
  std::map<std::string, std::string> files{{"pre.h", "#define VALUE 1\n"}};
  auto unit = [&](int n) {
    files["a.cpp"] = "#include \"pre.h\"\nextern \"C\" int f() { return VALUE; }  // " +
                     std::to_string(n) + "\n";
  };
  HostCompiler cc((dir_ / "kernels").string());
  const fs::path path = cc.precompiled_path(files, {"-O0"}, pch);
  ASSERT_FALSE(path.empty());
  unit(1);
  EXPECT_EQ(value_of(cc, files, pch), 1);
  EXPECT_FALSE(fs::exists(path)) << "the first build waited for a precompiled header";
  unit(2);
  EXPECT_EQ(value_of(cc, files, pch), 1);
  for (int i = 0; i < 600 && !fs::exists(path); ++i) std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(fs::exists(path));

  // Replaced by one made from other text, it is what the next build reads:
  // the builds use the precompiled header rather than parsing pre.h.
  HostCompiler other((dir_ / "other").string());
  std::map<std::string, std::string> two{{"pre.h", "#define VALUE 2\n"}};
  ASSERT_TRUE(other.make_precompiled(two, {"-O0"}, pch));
  fs::copy_file(other.precompiled_path(two, {"-O0"}, pch), path,
                fs::copy_options::overwrite_existing);
  unit(3);
  EXPECT_EQ(value_of(cc, files, pch), 2);
  // Other text in pre.h is another key: that header is parsed, not served
  // a precompiled header made from other text.
  files["pre.h"] = "#define VALUE 3\n";
  unit(4);
  EXPECT_EQ(value_of(cc, files, pch), 3);
}

}  // namespace
}  // namespace lizard

namespace lizard {
namespace {

// A FIFO where an entry belongs is no entry: it is compiled and replaced, at
// once (an open() of it would wait for a writer for ever).
TEST_F(CompileCacheTest, AFifoWhereAnEntryBelongsIsReplacedWithoutWaiting) {
  fs::create_directories(dir_);
  ASSERT_EQ(::mkfifo((dir_ / "k1.bin").c_str(), 0600), 0);
  EXPECT_FALSE(cache().contains("k1", ".bin"));
  const auto start = std::chrono::steady_clock::now();
  auto e = cache().get_or_compile("k1", ".bin", counted("the image"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_FALSE(e->hit);
  EXPECT_EQ(compiles_, 1);
  EXPECT_TRUE(fs::is_regular_file(dir_ / "k1.bin"));
  EXPECT_TRUE(cache().get_or_compile("k1", ".bin", counted("the image"))->hit);
}

// A compile that reads a FIFO (here from an include directory the flags
// name) is killed at the compile time-out, with the compiler's process group.
TEST_F(CompileCacheTest, ACompileThatNeverEndsIsKilledAtTheTimeOut) {
  const fs::path include = dir_ / "include";
  fs::create_directories(include);
  ASSERT_EQ(::mkfifo((include / "fifo.h").c_str(), 0600), 0);
  HostCompiler cc((dir_ / "kernels").string(), CompileCache::kDefaultMaxBytes, 1);
  const auto start = std::chrono::steady_clock::now();
  auto so =
      cc.build_shared({{"a.cpp", "#include \"fifo.h\"\nextern \"C\" int f() { return 1; }\n"}},
                      {"a.cpp"}, {"-I" + include.string()});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(so.ok());
  EXPECT_EQ(so.status().code(), Code::kCompileError);
  EXPECT_EQ(so.status().message(), "compile timed out after 1 s");
  EXPECT_LT(took, 10s);
  EXPECT_GE(took, 900ms);
  // The build slot is free again: a good build goes through.
  auto good = cc.build_shared({{"a.cpp", "extern \"C\" int f() { return 1; }\n"}}, {"a.cpp"}, {});
  EXPECT_TRUE(good.ok()) << good.status().message();
}

}  // namespace
}  // namespace lizard
