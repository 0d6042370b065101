#include "exec/compiler_host.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "exec/host_compiler.h"
#include "sandbox/landlock.h"
#include "sandbox/sandbox.h"

namespace fs = std::filesystem;

namespace lizard {
namespace {

class CompilerHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("lizard-compiler-host-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(root() + "/build");
  }
  void TearDown() override {
    HostCompiler::run_compiler_through(nullptr);
    hosts_.reset();
    fs::remove_all(dir_);
  }
  std::string root() const { return (dir_ / "root").string(); }
  std::unique_ptr<CompilerHosts> start_hosts() {
    CompilerHostOptions o;
    o.root = root();
    o.program = LIZARD_BIN;
    auto hosts = CompilerHosts::start(o);
    EXPECT_TRUE(hosts.ok()) << hosts.status().message();
    return hosts.ok() ? std::move(hosts).value() : nullptr;
  }
  // `source` built into a library, with this process's HostCompiler runner.
  Result<std::string> build(const std::string& cache, const std::string& source) {
    HostCompiler cc(cache);
    return cc.build_shared({{"a.cpp", source}}, {"a.cpp"}, {"-O2", "-fvisibility=default"});
  }
  fs::path dir_;
  std::unique_ptr<CompilerHosts> hosts_;
};

TEST_F(CompilerHostTest, PassesHostCompilersBuildsAndRefusesEveryOtherCommand) {
  const std::string cc = HostCompiler::default_compiler();
  const std::string build = root() + "/build";
  const std::vector<std::string> builds[] = {
      {cc, "--version"},
      {cc, "-shared", "-fPIC", "-std=c++17", "-I.", "-O2", "-fvisibility=default", "host.cpp", "-o",
       "lib.so"},
      {cc, "-fPIC", "-std=c++17", "-I.", "-O3", "-march=native", "-fno-math-errno",
       "-fno-strict-aliasing", "-fvisibility=hidden", "-pthread", "-x", "c++-header", "prelude.h",
       "-o", "prelude.h.gch"},
      {cc, "-shared", "-fPIC", "-I.", "src/host.cpp", "-o", "lib.so"},
  };
  for (const auto& argv : builds) EXPECT_TRUE(check_compiler_command(argv, build, cc, root()).ok());

  const fs::path outside = dir_ / "outside";
  fs::create_directories(outside);
  fs::create_symlink(outside, root() + "/leads-out");
  struct Refused {
    std::vector<std::string> argv;
    std::string cwd;
  };
  const Refused refused[] = {
      {{"/bin/sh", "-c", "true"}, build},
      {{cc, "-fplugin=evil.so", "a.cpp"}, build},
      {{cc, "-wrapper", "sh,-c,true", "a.cpp"}, build},
      {{cc, "-B/tmp", "a.cpp"}, build},
      {{cc, "-specs=x", "a.cpp"}, build},
      {{cc, "@options", "a.cpp"}, build},
      {{cc, "-Wl,-plugin,x.so", "a.cpp"}, build},
      {{cc, "/etc/passwd"}, build},
      {{cc, "../a.cpp"}, build},
      {{cc, "a.cpp", "-o", "../../lib.so"}, build},
      {{cc, "a.cpp"}, outside.string()},
      {{cc, "a.cpp"}, root() + "/leads-out"},
      {{cc, "a.cpp"}, ""},
  };
  for (const Refused& r : refused) {
    const Status st = check_compiler_command(r.argv, r.cwd, cc, root());
    EXPECT_EQ(st.code(), Code::kPermissionDenied) << r.argv[1] << " in " << r.cwd;
  }
}

TEST_F(CompilerHostTest, BuildsThroughAHostAsInProcessAndAnswersARefusal) {
  hosts_ = start_hosts();
  ASSERT_TRUE(hosts_);
  HostCompiler::run_compiler_through(hosts_->runner());
  auto so = build(root() + "/kernels", "extern \"C\" int seven() { return 7; }\n");
  ASSERT_TRUE(so.ok()) << so.status().message();
  EXPECT_TRUE(fs::is_regular_file(so.value()));
  auto broken = build(root() + "/kernels", "int f() { return }\n");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), Code::kCompileError);
  EXPECT_NE(broken.status().message().find("a.cpp"), std::string::npos);

  auto refused = hosts_->run({"/bin/sh", "-c", "echo hi"}, root(), 10000);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kPermissionDenied);
  // The host serves on after a refusal.
  auto version = hosts_->run({HostCompiler::default_compiler(), "--version"}, "", 10000);
  ASSERT_TRUE(version.ok()) << version.status().message();
  EXPECT_EQ(version->exit_code, 0);
}

// A daemon started with relative directories (`--state-dir st`) hands its
// hosts a relative root and relative build directories: they build there.
TEST_F(CompilerHostTest, BuildsBeneathARootNamedRelativeToTheDaemonsDirectory) {
  const fs::path was = fs::current_path();
  fs::current_path(dir_);
  CompilerHostOptions o;
  o.root = "st/hooks";
  o.program = LIZARD_BIN;
  auto hosts = CompilerHosts::start(o);
  ASSERT_TRUE(hosts.ok()) << hosts.status().message();
  hosts_ = std::move(hosts).value();
  HostCompiler::run_compiler_through(hosts_->runner());
  auto so = build("st/hooks/kernels", "extern \"C\" int seven() { return 7; }\n");
  fs::current_path(was);
  ASSERT_TRUE(so.ok()) << so.status().message();
  EXPECT_TRUE(fs::is_regular_file(dir_ / so.value()) || fs::is_regular_file(so.value()));
}

// A source that makes its assembler read a file (.incbin) gets the file's
// bytes in-process, and a compile error through a compiler host, whose
// sandbox reads nothing outside the system and its root.
TEST_F(CompilerHostTest, ACompileReadsNoFileOutsideTheSystemAndItsRoot) {
  if (sandbox_disabled() || landlock_abi() == 0) GTEST_SKIP() << "no Landlock here";
  const std::string secret = (dir_ / "secret.txt").string();
  std::ofstream(secret) << "the daemon's token: 0123456789abcdef\n";
  const std::string source = "asm(\".section .rodata\\n.incbin \\\"" + secret +
                             "\\\"\\n.previous\");\nextern \"C\" int f() { return 1; }\n";
  auto direct = build((dir_ / "direct").string(), source);
  ASSERT_TRUE(direct.ok()) << direct.status().message();

  hosts_ = start_hosts();
  ASSERT_TRUE(hosts_);
  HostCompiler::run_compiler_through(hosts_->runner());
  auto hosted = build(root() + "/kernels", source);
  ASSERT_FALSE(hosted.ok());
  EXPECT_EQ(hosted.status().code(), Code::kCompileError);
  EXPECT_EQ(hosted.status().message().find("0123456789abcdef"), std::string::npos);
  EXPECT_NE(hosted.status().message().find("secret.txt"), std::string::npos)  // the assembler's
      << hosted.status().message();                                           // "file not found"
}

// Within the root, a compile reads only its own build: not another
// program's build beside it, which an .incbin would otherwise embed.
TEST_F(CompilerHostTest, ACompileReadsNothingOfTheRootButItsBuild) {
  if (sandbox_disabled() || landlock_abi() == 0) GTEST_SKIP() << "no Landlock here";
  const std::string other = root() + "/kernels/other-program.so";
  fs::create_directories(root() + "/kernels");
  std::ofstream(other) << "another program's library: fedcba9876543210\n";
  hosts_ = start_hosts();
  ASSERT_TRUE(hosts_);
  HostCompiler::run_compiler_through(hosts_->runner());
  auto plain = build(root() + "/kernels", "extern \"C\" int f() { return 1; }\n");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  auto hosted =
      build(root() + "/kernels", "asm(\".section .rodata\\n.incbin \\\"" + other +
                                     "\\\"\\n.previous\");\nextern \"C\" int g() { return 1; }\n");
  ASSERT_FALSE(hosted.ok());
  EXPECT_NE(hosted.status().message().find("other-program.so"), std::string::npos)
      << hosted.status().message();
  EXPECT_EQ(hosted.status().message().find("fedcba9876543210"), std::string::npos);
}

// Narrowed to one owner's directory, the hosts build there and no longer
// beneath the rest of their root, and a compile there reads the shared
// precompiled headers but not another owner's builds.
TEST_F(CompilerHostTest, NarrowedToAnOwnerTheHostsBuildOnlyThere) {
  const std::string kernels = root() + "/kernels";
  const std::string mine = kernels + "/" + std::string(64, 'a');
  const std::string theirs = kernels + "/" + std::string(64, 'b');
  fs::create_directories(theirs);
  fs::create_directories(kernels + "/pch");
  std::ofstream(theirs + "/their-program.so") << "their library: 0123abcd0123abcd\n";
  std::ofstream(kernels + "/pch/shared.h") << "#define SHARED 5\n";
  hosts_ = start_hosts();
  ASSERT_TRUE(hosts_);
  HostCompiler::run_compiler_through(hosts_->runner());
  ASSERT_TRUE(hosts_->narrow(mine, kernels + "/pch").ok());
  HostCompiler owned = HostCompiler(kernels).for_owner(std::string(64, 'a'));
  auto so =
      owned.build_shared({{"a.cpp", "extern \"C\" int f() { return 1; }\n"}}, {"a.cpp"}, {"-O2"});
  ASSERT_TRUE(so.ok()) << so.status().message();
  EXPECT_EQ(fs::path(so.value()).parent_path(), fs::path(mine));
  // Elsewhere beneath the old root: refused.
  auto elsewhere = build(kernels, "extern \"C\" int g() { return 2; }\n");
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_NE(elsewhere.status().message().find("beneath"), std::string::npos)
      << elsewhere.status().message();
  if (sandbox_disabled() || landlock_abi() == 0) return;
  auto shared = owned.build_shared(
      {{"b.cpp",
        "#include \"" + kernels + "/pch/shared.h\"\nextern \"C\" int h() { return SHARED; }\n"}},
      {"b.cpp"}, {"-O2"});
  EXPECT_TRUE(shared.ok()) << shared.status().message();
  auto stolen = owned.build_shared(
      {{"c.cpp",
        "asm(\".section .rodata\\n.incbin \\\"" + theirs +
            "/their-program.so\\\"\\n.previous\");\nextern \"C\" int i() { return 1; }\n"}},
      {"c.cpp"}, {"-O2"});
  ASSERT_FALSE(stolen.ok());
  EXPECT_EQ(stolen.status().message().find("0123abcd0123abcd"), std::string::npos);
}

}  // namespace
}  // namespace lizard
