#include "sandbox/sandbox.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "sandbox/landlock.h"
#include "sandbox/syscall_filter.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

// Runs `probe` in a child process that entered the sandbox `spec`: its exit
// status, which is what probe returned (an errno, or 0).
int in_sandbox(const SandboxSpec& spec, const std::function<int()>& probe) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    (void)enter_sandbox(spec);
    ::_exit(probe());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// What a call that failed set errno to, or 0 where it succeeded.
int errno_of(long rc) {
  return rc < 0 ? errno : 0;
}

class Sandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lizard-sandbox-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(dir_ / "scratch");
    fs::create_directories(dir_ / "outside");
    std::ofstream(dir_ / "outside" / "secret") << "secret";
    std::ofstream(dir_ / "scratch" / "mine") << "mine";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  SandboxSpec spec(bool restrict_reads = false) const {
    SandboxSpec s;
    s.restrict_reads = restrict_reads;
    s.read_beneath = system_read_paths();
    s.write_beneath = {(dir_ / "scratch").string()};
    return s;
  }
  static bool have_landlock() { return landlock_abi() > 0; }

  fs::path dir_;
  static inline int counter_ = 0;
};

TEST_F(Sandbox, ItCannotTraceItsParentNorTakeItsDescriptorsNorReadItsMemory) {
  if (!syscall_filter_built()) GTEST_SKIP() << "built without libseccomp";
  const pid_t parent = ::getpid();
  EXPECT_EQ(in_sandbox(spec(), [&] { return errno_of(::ptrace(PTRACE_ATTACH, parent, 0, 0)); }),
            EPERM);
  EXPECT_EQ(in_sandbox(spec(),
                       [&] {
                         const long pidfd = ::syscall(SYS_pidfd_open, parent, 0);
                         if (pidfd < 0) return EPERM;  // refused already: as good
                         return errno_of(::syscall(SYS_pidfd_getfd, pidfd, 0, 0));
                       }),
            EPERM);
  static int value = 7;
  EXPECT_EQ(in_sandbox(spec(),
                       [&] {
                         int copy = 0;
                         iovec local{&copy, sizeof copy}, remote{&value, sizeof value};
                         return errno_of(::process_vm_readv(parent, &local, 1, &remote, 1, 0));
                       }),
            EPERM);
}

TEST_F(Sandbox, ItWritesOnlyBeneathItsScratchDirectory) {
  if (!have_landlock()) GTEST_SKIP() << "no Landlock in this kernel";
  const std::string inside = (dir_ / "scratch" / "new").string();
  const std::string outside = (dir_ / "outside" / "new").string();
  auto create = [](const std::string& path) {
    return [path] { return errno_of(::open(path.c_str(), O_CREAT | O_WRONLY, 0600)); };
  };
  EXPECT_EQ(in_sandbox(spec(), create(inside)), 0);
  EXPECT_EQ(in_sandbox(spec(), create(outside)), EACCES);
  EXPECT_FALSE(fs::exists(outside));
  const std::string secret = (dir_ / "outside" / "secret").string();
  EXPECT_EQ(in_sandbox(spec(), [&] { return errno_of(::open(secret.c_str(), O_WRONLY)); }), EACCES);
  EXPECT_EQ(in_sandbox(spec(), [&] { return errno_of(::unlink(secret.c_str())); }), EACCES);
  EXPECT_TRUE(fs::exists(secret));
}

TEST_F(Sandbox, WithReadsRestrictedItReadsOnlyTheSystemAndWhatItIsGiven) {
  if (!have_landlock()) GTEST_SKIP() << "no Landlock in this kernel";
  const std::string secret = (dir_ / "outside" / "secret").string();
  const std::string mine = (dir_ / "scratch" / "mine").string();
  const std::string parent_cmdline = "/proc/" + std::to_string(::getpid()) + "/cmdline";
  auto read = [](const std::string& path) {
    return [path] { return errno_of(::open(path.c_str(), O_RDONLY)); };
  };
  EXPECT_EQ(in_sandbox(spec(true), read(secret)), EACCES);
  EXPECT_EQ(in_sandbox(spec(true), read(parent_cmdline)), EACCES);
  EXPECT_EQ(in_sandbox(spec(true), read(mine)), 0);
  EXPECT_EQ(in_sandbox(spec(true), read("/proc/self/status")), 0);
  EXPECT_EQ(in_sandbox(spec(true), read("/usr/include/stdio.h")), 0);
  // Unrestricted reads stay so.
  EXPECT_EQ(in_sandbox(spec(false), read(secret)), 0);
}

TEST_F(Sandbox, ItStartsNoProcessUnlessAllowedButMakesThreads) {
  if (!syscall_filter_built()) GTEST_SKIP() << "built without libseccomp";
  auto fork_once = [] {
    const pid_t p = ::fork();
    if (p == 0) ::_exit(0);
    if (p < 0) return errno;
    ::waitpid(p, nullptr, 0);
    return 0;
  };
  EXPECT_EQ(in_sandbox(spec(), fork_once), EPERM);
  EXPECT_EQ(in_sandbox(spec(),
                       [] {
                         char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
                         return errno_of(::execv("/bin/true", argv));
                       }),
            EPERM);
  EXPECT_EQ(in_sandbox(spec(),
                       [] {
                         int ran = 0;
                         std::thread([&] { ran = 1; }).join();
                         return ran == 1 ? 0 : 1;
                       }),
            0);
  SandboxSpec allowed = spec();
  allowed.allow_processes = true;
  EXPECT_EQ(in_sandbox(allowed, fork_once), 0);
}

TEST_F(Sandbox, ItSignalsNoProcessOutside) {
  const pid_t parent = ::getpid();
  SandboxSpec allowed = spec();
  allowed.allow_processes = true;  // kill() is then left to Landlock's scope
  if (landlock_abi() < 6 && !syscall_filter_built()) GTEST_SKIP() << "neither piece here";
  EXPECT_EQ(in_sandbox(spec(), [&] { return errno_of(::kill(parent, 0)); }), EPERM);
  if (landlock_abi() >= 6) {
    EXPECT_EQ(in_sandbox(allowed, [&] { return errno_of(::kill(parent, 0)); }), EPERM);
  }
}

TEST_F(Sandbox, ItConnectsToNoTcpPort) {
  if (landlock_abi() < 4) GTEST_SKIP() << "Landlock ABI " << landlock_abi() << " has no TCP rules";
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  EXPECT_EQ(in_sandbox(spec(),
                       [&] {
                         const int s = ::socket(AF_INET, SOCK_STREAM, 0);
                         return errno_of(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a));
                       }),
            EACCES);
  ::close(listener);
}

TEST_F(Sandbox, LizardSandboxOffTurnsItOff) {
  ::setenv("LIZARD_SANDBOX", "off", 1);
  EXPECT_TRUE(probe_sandbox().disabled);
  const std::string outside = (dir_ / "outside" / "new").string();
  EXPECT_EQ(in_sandbox(spec(),
                       [&] {
                         if (!enter_sandbox(spec()).disabled) return 1;
                         return errno_of(::open(outside.c_str(), O_CREAT | O_WRONLY, 0600));
                       }),
            0);
  ::unsetenv("LIZARD_SANDBOX");
  EXPECT_FALSE(probe_sandbox().disabled);
}

TEST_F(Sandbox, TheReportNamesWhatItAppliedAndWhatIsMissing) {
  SandboxReport r;
  r.applied = {"no_new_privs", "seccomp"};
  r.missing = {"landlock: not enabled in this kernel"};
  EXPECT_EQ(r.summary(),
            "applied: no_new_privs, seccomp; missing: landlock: not enabled in this kernel");
  const SandboxReport probed = probe_sandbox();
  EXPECT_FALSE(probed.applied.empty());
  EXPECT_EQ(probed.missing.empty(), landlock_abi() > 0 && syscall_filter_built());
}

}  // namespace
}  // namespace lizard
