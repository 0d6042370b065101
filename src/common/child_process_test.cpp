#include "common/child_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dataset/test_files.h"

namespace lizard {
namespace {

// A helper that echoes every byte of its channel back: frames come back whole.
std::unique_ptr<ChildProcess> echo_child() {
  auto c = ChildProcess::spawn({"-c", "exec cat <&3 >&3"}, "/bin/sh");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(c).value() : nullptr;
}

// A captured helper's stdout and stderr both reach the pipe, which ends
// (reads 0) once the helper is gone; the daemon's own are left alone.
TEST(ChildProcess, CapturedOutputReachesThePipe) {
  auto c = ChildProcess::spawn({"-c", "echo out; echo err >&2"}, "/bin/sh", ChildOutput::kCaptured);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const int fd = (*c)->take_output_fd();
  ASSERT_GE(fd, 0);
  EXPECT_EQ((*c)->take_output_fd(), -1);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  ::close(fd);
  EXPECT_EQ(got, "out\nerr\n");
  EXPECT_TRUE((*c)->wait_exit(5000));
  auto plain = ChildProcess::spawn({"-c", "exit 0"}, "/bin/sh");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->take_output_fd(), -1);
}

TEST(ChildProcess, FramesGoThereAndBackWhole) {
  auto c = echo_child();
  ASSERT_TRUE(c);
  std::string big(3 << 20, 'x');
  big[12345] = 'y';
  ASSERT_TRUE(c->channel().send("hello").ok());
  ASSERT_TRUE(c->channel().send("").ok());
  std::string_view parts[] = {"ab", "", "cd"};
  ASSERT_TRUE(c->channel().send_parts(parts, 3).ok());
  auto a = c->channel().receive(5000);
  auto b = c->channel().receive(5000);
  auto d = c->channel().receive(5000);
  ASSERT_TRUE(a.ok() && b.ok() && d.ok());
  EXPECT_EQ(*a, "hello");
  EXPECT_EQ(*b, "");
  EXPECT_EQ(*d, "abcd");
  // A frame larger than the socket buffer needs a reader while it is sent.
  std::thread writer([&] { EXPECT_TRUE(c->channel().send(big).ok()); });
  auto e = c->channel().receive(5000);
  writer.join();
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, big);
}

TEST(ChildProcess, ReceiveGivesUpAfterItsTimeout) {
  auto c = ChildProcess::spawn({"-c", "exec sleep 30"}, "/bin/sh");
  ASSERT_TRUE(c.ok());
  auto t0 = std::chrono::steady_clock::now();
  auto r = (*c)->channel().receive(200);
  EXPECT_EQ(r.status().code(), Code::kCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE((*c)->running());
  (*c)->kill();
  EXPECT_FALSE((*c)->running());
  EXPECT_EQ((*c)->exit_description().rfind("killed by signal 9", 0), 0u)
      << (*c)->exit_description();
}

TEST(ChildProcess, ADeadChildReadsAsClosedAndSaysHowItDied) {
  auto c = ChildProcess::spawn({"-c", "kill -SEGV $$"}, "/bin/sh");
  ASSERT_TRUE(c.ok());
  auto r = (*c)->channel().receive(10000);
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  ASSERT_TRUE((*c)->wait_exit(5000));
  EXPECT_NE((*c)->exit_description().find("SIGSEGV"), std::string::npos)
      << (*c)->exit_description();
  EXPECT_FALSE((*c)->channel().send("x").ok());
}

TEST(ChildProcess, FramesReadIntoBytesArriveWholeAndInOrder) {
  auto c = echo_child();
  ASSERT_TRUE(c);
  std::string big(5 << 20, 'a');
  big[4242] = 'b';
  std::thread writer([&] {
    EXPECT_TRUE(c->channel().send(big).ok());
    EXPECT_TRUE(c->channel().send("").ok());
    EXPECT_TRUE(c->channel().send("tail").ok());
  });
  std::vector<uint8_t> bytes{1, 2, 3};
  ASSERT_TRUE(c->channel().receive_into(&bytes, 5000).ok());
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), big);
  ASSERT_TRUE(c->channel().receive_into(&bytes, 5000).ok());
  EXPECT_TRUE(bytes.empty());
  auto tail = c->channel().receive(-1);  // no deadline: a plain blocking read
  writer.join();
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, "tail");
}

TEST(ChildProcess, ExitStatusIsReported) {
  auto c = ChildProcess::spawn({"-c", "exit 3"}, "/bin/sh");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->wait_exit(5000));
  EXPECT_EQ((*c)->exit_description(), "exited with status 3");
}

// A daemon blocks SIGTERM for its signal thread and ignores SIGPIPE; its
// helpers must still die of the signals they get.
TEST(ChildProcess, TheChildStartsWithNoSignalBlockedOrIgnored) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  auto previous = std::signal(SIGPIPE, SIG_IGN);
  // Signals 1 to 31 are the low 31 bits; glibc keeps 32 and 33 for itself.
  const std::string check =
      "grep -Eq '^SigBlk:[[:space:]]*[0-9a-f]*[08]0{7}$' /proc/self/status && "
      "grep -Eq '^SigIgn:[[:space:]]*[0-9a-f]*[08]0{7}$' /proc/self/status";
  auto c = ChildProcess::spawn({"-c", check}, "/bin/sh");
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  std::signal(SIGPIPE, previous);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->wait_exit(5000));
  EXPECT_EQ((*c)->exit_description(), "exited with status 0");
}

TEST(ChildProcess, AMissingProgramIsAnError) {
  auto c = ChildProcess::spawn({}, "/nonexistent/program");
  // posix_spawn may report the failure itself or as the child's exit 127.
  if (c.ok()) {
    ASSERT_TRUE((*c)->wait_exit(5000));
    EXPECT_EQ((*c)->exit_description(), "exited with status 127");
  }
}

// The state letter of process `pid` in /proc (R, S, Z, ...); 0 once it is gone.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// Dead: gone, or a zombie that its new parent has not reaped yet.
bool dead(pid_t pid) {
  const char state = process_state(pid);
  return state == 0 || state == 'Z';
}

// Whether `pid` is gone (or a zombie) within 2 s.
bool dies_within_2s(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (dead(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The number a helper wrote to `path`, once it has (0 after 5 s).
pid_t read_pid(const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream in(path);
    pid_t pid = 0;
    if (in >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

// A descriptor of the daemon that is not close-on-exec (as Asio's sockets
// are not) stays behind: the helper has 0, 1, 2, its channel and mailboxes.
TEST(ChildProcess, AHelperGetsOnlyItsChannelOfTheDaemonsDescriptors) {
  const int inheritable = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(inheritable, 0);
  ASSERT_GE(::dup2(inheritable, 57), 0);
  // The helper becomes `sleep` (exec), which opens nothing of its own: its
  // descriptors are exactly those it was started with.
  auto c = ChildProcess::spawn({"-c", "exec sleep 30"}, "/bin/sh");
  ::close(57);
  ::close(inheritable);
  ASSERT_TRUE(c.ok());
  const std::string dir = "/proc/" + std::to_string((*c)->pid()) + "/fd";
  const std::string proc = "/proc/" + std::to_string((*c)->pid());
  const auto open_fds = [&] {
    std::set<int> now;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      now.insert(std::stoi(e.path().filename().string()));
    return now;
  };
  // Until sleep is asleep: while it starts it opens files of its own (the
  // locale), which are not the daemon's.
  const auto asleep = [&] {
    char exe[256] = {};
    const ssize_t n = ::readlink((proc + "/exe").c_str(), exe, sizeof exe - 1);
    if (n <= 0 || std::string(exe).find("sleep") == std::string::npos) return false;
    std::ifstream stat(proc + "/stat");
    std::string pid, comm, state;
    return static_cast<bool>(stat >> pid >> comm >> state) && state == "S";
  };
  std::set<int> fds;
  for (int tries = 0; tries < 500 && fds.empty(); ++tries) {
    if (asleep()) {
      std::set<int> first = open_fds();
      ::usleep(20000);
      if (asleep() && open_fds() == first) fds = std::move(first);
    }
    if (fds.empty()) ::usleep(10000);
  }
  ASSERT_FALSE(fds.empty()) << "the helper never fell asleep in sleep";
  EXPECT_EQ(fds.count(57), 0u);
  if (inheritable > 4) {  // else 3 or 4 is the helper's own
    EXPECT_EQ(fds.count(inheritable), 0u);
  }
  EXPECT_EQ(fds.count(3), 1u);
  for (int fd : fds) EXPECT_LE(fd, 4) << "the helper holds descriptor " << fd;
  (*c)->kill();
}

TEST(ChildProcess, KillEndsWhatTheHelperStarted) {
  TempDir dir;
  const std::string pid_file = dir.path("pid");
  auto c = ChildProcess::spawn({"-c", "sleep 30 & echo $! > " + pid_file + "; wait"}, "/bin/sh");
  ASSERT_TRUE(c.ok());
  const pid_t sleeper = read_pid(pid_file);
  ASSERT_GT(sleeper, 0);
  EXPECT_FALSE(dead(sleeper));
  (*c)->kill();
  const bool gone = dies_within_2s(sleeper);
  EXPECT_TRUE(gone) << "the helper's child " << sleeper << " outlived it";
  if (!gone) ::kill(sleeper, SIGKILL);
}

TEST(ChildProcess, AHelperThatEndsByItselfTakesWhatItLeftRunning) {
  TempDir dir;
  const std::string pid_file = dir.path("pid");
  auto c = ChildProcess::spawn({"-c", "sleep 30 & echo $! > " + pid_file + "; exit 0"}, "/bin/sh");
  ASSERT_TRUE(c.ok());
  const pid_t sleeper = read_pid(pid_file);
  ASSERT_GT(sleeper, 0);
  ASSERT_TRUE((*c)->wait_exit(5000));
  EXPECT_EQ((*c)->exit_description(), "exited with status 0");
  const bool gone = dies_within_2s(sleeper);
  EXPECT_TRUE(gone) << "the helper's child " << sleeper << " outlived it";
  if (!gone) ::kill(sleeper, SIGKILL);
}

// A child of the helper inherits its end of the channel: the helper's end
// still reads as closed once the helper exits.
TEST(ChildProcess, AHelperThatEndsReadsAsClosedWhileItsChildHoldsTheChannel) {
  TempDir dir;
  const std::string pid_file = dir.path("pid");
  auto c = ChildProcess::spawn({"-c", "sleep 30 & echo $! > " + pid_file + "; exit 4"}, "/bin/sh");
  ASSERT_TRUE(c.ok());
  const pid_t sleeper = read_pid(pid_file);
  ASSERT_GT(sleeper, 0);
  const auto t0 = std::chrono::steady_clock::now();
  std::string frame;
  EXPECT_EQ((*c)->receive_into(&frame, 20000).code(), Code::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE((*c)->wait_exit(5000));
  EXPECT_EQ((*c)->exit_description(), "exited with status 4");
  const bool gone = dies_within_2s(sleeper);
  EXPECT_TRUE(gone) << "the helper's child " << sleeper << " outlived it";
  if (!gone) ::kill(sleeper, SIGKILL);
}

TEST(ChildProcess, ReapExitedChildrenLeavesNoZombie) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  for (int i = 0; i < 500 && process_state(child) != 'Z'; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(process_state(child), 'Z');
  EXPECT_GE(ChildProcess::reap_exited_children(), 1);
  EXPECT_EQ(process_state(child), 0);
  EXPECT_EQ(ChildProcess::reap_exited_children(), 0);
}

}  // namespace
}  // namespace lizard
