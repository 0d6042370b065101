#include "common/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

extern char** environ;

namespace lizard {
namespace {

constexpr int kChannelFd = 3;
constexpr int kMailboxFd = 4;      // the channel's mailboxes, where it has them
constexpr int kFirstClosedFd = 5;  // the helper starts with no descriptor from here on
// The daemon's pid, which the helper checks its parent against: a daemon may
// itself be process 1 (a container's entrypoint), so a parent of 1 alone does
// not say that the daemon is gone.
constexpr char kParentPidVar[] = "LIZARD_PARENT_PID";
// How often a helper reaps what its user code left behind: after a request,
// at most this often, and while it waits for one, at least this often.
constexpr auto kReapAfterRequest = std::chrono::milliseconds(100);
constexpr int kReapWhileIdleMs = 1000;
// How often a daemon waiting for a helper's reply looks whether it ended.
constexpr int kEndedPollMs = 50;

// A descriptor to dup2 onto fd 3 or 4 in the child: one of the daemon's
// above them, so that one dup2 cannot overwrite the source of the other.
class SpawnSource {
 public:
  explicit SpawnSource(int fd) : fd_(fd) {
    if (fd_ >= 0 && fd_ < kFirstClosedFd)
      fd_ = owned_ = ::fcntl(fd, F_DUPFD_CLOEXEC, kFirstClosedFd);
  }
  ~SpawnSource() {
    if (owned_ >= 0) ::close(owned_);
  }
  SpawnSource(const SpawnSource&) = delete;
  SpawnSource& operator=(const SpawnSource&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
  int owned_ = -1;
};

// Children are started from one thread that lives as long as the process:
// PR_SET_PDEATHSIG fires when the *thread* that started a child ends, so a
// child started from a short-lived thread (a run's, an std::async task)
// would be killed with it.
class Spawner {
 public:
  static Spawner& instance() {
    static Spawner* s = new Spawner;  // never destroyed: its thread outlives main()
    return *s;
  }
  template <typename F>
  auto run(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> l(mu_);
      tasks_.emplace_back([&task] { task(); });
    }
    cv_.notify_one();
    return result.get();
  }

 private:
  Spawner() {
    std::thread([this] { loop(); }).detach();
  }
  void loop() {
    for (;;) {
      std::function<void()> t;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return !tasks_.empty(); });
        t = std::move(tasks_.front());
        tasks_.pop_front();
      }
      t();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
};

}  // namespace

std::string describe_signal(int sig) {
  const char* name = sigabbrev_np(sig);
  std::string out = "signal " + std::to_string(sig);
  if (name != nullptr) out += std::string(" (SIG") + name;
  switch (sig) {
    case SIGSEGV:
      out += ", a segmentation fault";
      break;
    case SIGBUS:
      out += ", a bus error";
      break;
    case SIGFPE:
      out += ", an arithmetic fault";
      break;
    case SIGILL:
      out += ", an illegal instruction";
      break;
    case SIGABRT:
      out += ", abort()";
      break;
    default:
      break;
  }
  if (name != nullptr) out += ")";
  return out;
}

ChildProcess::~ChildProcess() {
  kill();
  if (output_fd_ >= 0) ::close(output_fd_);
}

int ChildProcess::take_output_fd() {
  const int fd = output_fd_;
  output_fd_ = -1;
  return fd;
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::spawn(const std::vector<std::string>& args,
                                                          const std::string& program,
                                                          ChildOutput output) {
  std::string exe = program;
  if (exe.empty()) {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return internal_error("cannot find this program's binary");
    exe.assign(buf, static_cast<size_t>(n));
  }
  LIZARD_ASSIGN_OR_RETURN(auto ends, FrameChannel::pair());
  const SpawnSource channel_fd(ends.second.fd());
  const SpawnSource mailbox_fd(ends.second.mailbox_fd());
  if (channel_fd.fd() < 0 || (ends.second.mailbox_fd() >= 0 && mailbox_fd.fd() < 0))
    return internal_error(std::string("cannot start a helper: ") + std::strerror(errno));
  // The pipe of a captured stdout and stderr: both close-on-exec here, its
  // write end dup2'd onto 1 and 2 in the child.
  int out_pipe[2] = {-1, -1};
  if (output == ChildOutput::kCaptured && ::pipe2(out_pipe, O_CLOEXEC) != 0)
    return internal_error(std::string("cannot start a helper: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (out_pipe[1] >= 0) {
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDERR_FILENO);
  }
  // dup2 onto fd 3 (and 4) clears close-on-exec there; every other
  // descriptor of the daemon is closed in the child, close-on-exec or not.
  posix_spawn_file_actions_adddup2(&actions, channel_fd.fd(), kChannelFd);
  if (mailbox_fd.fd() >= 0) posix_spawn_file_actions_adddup2(&actions, mailbox_fd.fd(), kMailboxFd);
  posix_spawn_file_actions_addclosefrom_np(&actions, kFirstClosedFd);
  std::vector<std::string> all{exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string parent_pid = std::string(kParentPidVar) + "=" + std::to_string(::getpid());
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, kParentPidVar, sizeof kParentPidVar - 1) != 0) envp.push_back(*e);
  envp.push_back(const_cast<char*>(parent_pid.c_str()));
  envp.push_back(nullptr);
  // The helper starts with no signal blocked or ignored, whatever the daemon
  // blocks (SIGINT, SIGTERM for its signal thread) or ignores (SIGPIPE).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, every;
  sigemptyset(&none);
  sigfillset(&every);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &every);
  // Its own process group, which kill() ends whole: the helper and whatever
  // its user code started.
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  int rc = Spawner::instance().run(
      [&] { return ::posix_spawn(&pid, exe.c_str(), &actions, &attr, argv.data(), envp.data()); });
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (out_pipe[1] >= 0) ::close(out_pipe[1]);  // the child's alone: EOF once it is gone
  if (rc != 0) {
    if (out_pipe[0] >= 0) ::close(out_pipe[0]);
    return internal_error("cannot start " + exe + ": " + std::strerror(rc));
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, std::move(ends.first), out_pipe[0]));
}

Result<FrameChannel> ChildProcess::parent_channel() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // What user code forks and then orphans comes back to the helper, which
  // reaps it (receive_request()).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const char* parent = std::getenv(kParentPidVar);
  const pid_t expected = parent != nullptr ? static_cast<pid_t>(std::atol(parent)) : 0;
  ::unsetenv(kParentPidVar);  // not for the user code a helper runs
  if (expected > 0 ? ::getppid() != expected : ::getppid() == 1)
    return unavailable("the parent process is gone");
  if (::fcntl(kChannelFd, F_GETFD) < 0) return invalid_argument("no channel on fd 3");
  ::fcntl(kChannelFd, F_SETFD, FD_CLOEXEC);
  FrameChannel channel(kChannelFd);
  // The channel's mailboxes, when the parent passed them: fd 4 is then the
  // memfd FrameMailboxes::create() made.
  char target[64] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(kMailboxFd);
  if (::readlink(link.c_str(), target, sizeof target - 1) > 0 &&
      std::string(target).rfind(std::string("/memfd:") + FrameMailboxes::kName, 0) == 0) {
    ::fcntl(kMailboxFd, F_SETFD, FD_CLOEXEC);
    auto boxes = FrameMailboxes::map(kMailboxFd);
    if (boxes.ok()) channel.attach_mailboxes(*boxes, 1, true);
  }
  return channel;
}

int ChildProcess::reap_exited_children() {
  int reaped = 0;
  for (;;) {
    const pid_t r = ::waitpid(-1, nullptr, WNOHANG);
    if (r > 0) {
      ++reaped;
    } else if (r == 0 || errno != EINTR) {
      return reaped;
    }
  }
}

Status ChildProcess::receive_request(FrameChannel* channel, std::string* frame) {
  using Clock = std::chrono::steady_clock;
  static Clock::time_point last_reap;
  if (Clock::now() - last_reap >= kReapAfterRequest) {
    reap_exited_children();
    last_reap = Clock::now();
  }
  for (;;) {
    Status st = channel->receive_into(frame, kReapWhileIdleMs);
    if (st.code() != Code::kCancelled) return st;
    reap_exited_children();
    last_reap = Clock::now();
  }
}

void ChildProcess::reap(bool block) {
  if (reaped_ || pid_ < 0) return;
  // Waits without reaping first: until it is reaped the helper's pid, and so
  // its process group's id, cannot be reused, so that killing the group
  // ends only what the helper left running.
  siginfo_t info{};
  int r;
  do {
    r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (errno == ECHILD) reaped_ = true;
    return;
  }
  if (info.si_pid != pid_) return;  // still running
  ::kill(-pid_, SIGKILL);
  int status = 0;
  pid_t w;
  do {
    w = ::waitpid(pid_, &status, 0);
  } while (w < 0 && errno == EINTR);
  reaped_ = true;
  wait_status_ = w == pid_ ? status : 0;
}

Status ChildProcess::receive_into(std::string* frame, int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int slice = kEndedPollMs;
    if (timeout_ms >= 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      slice = static_cast<int>(std::clamp<int64_t>(left, 0, kEndedPollMs));
    }
    Status st = channel_.receive_into(frame, slice);
    if (st.code() != Code::kCancelled) return st;
    if (has_ended()) {
      // What it sent before it ended is there to read by now.
      st = channel_.receive_into(frame, 0);
      return st.code() == Code::kCancelled ? unavailable("the helper process ended") : st;
    }
    if (timeout_ms >= 0 && Clock::now() >= deadline) return st;
  }
}

bool ChildProcess::has_ended() const {
  if (reaped_ || pid_ < 0) return true;
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid_;
}

bool ChildProcess::running() {
  reap(false);
  return !reaped_;
}

bool ChildProcess::wait_exit(int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (running()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

void ChildProcess::kill() {
  channel_.close();
  if (pid_ < 0 || reaped_) return;
  reap(false);
  if (reaped_) return;
  ::kill(-pid_, SIGKILL);  // the helper and what it started
  ::kill(pid_, SIGKILL);   // should it have left its group
  reap(true);
}

std::string ChildProcess::exit_description() {
  if (running()) return "running";
  if (WIFSIGNALED(wait_status_)) return "killed by " + describe_signal(WTERMSIG(wait_status_));
  if (WIFEXITED(wait_status_)) {
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status_));
  }
  return "ended";
}

}  // namespace lizard
