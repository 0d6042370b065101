#include "common/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
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
constexpr int kMailboxFd = 4;  // the channel's mailboxes, where it has them

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
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::spawn(const std::vector<std::string>& args,
                                                          const std::string& program) {
  std::string exe = program;
  if (exe.empty()) {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return internal_error("cannot find this program's binary");
    exe.assign(buf, static_cast<size_t>(n));
  }
  LIZARD_ASSIGN_OR_RETURN(auto ends, FrameChannel::pair());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto fd 3 clears close-on-exec there; every other descriptor of the
  // daemon that is close-on-exec stays behind.
  posix_spawn_file_actions_adddup2(&actions, ends.second.fd(), kChannelFd);
  if (ends.second.mailbox_fd() >= 0)
    posix_spawn_file_actions_adddup2(&actions, ends.second.mailbox_fd(), kMailboxFd);
  std::vector<std::string> all{exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The helper starts with no signal blocked or ignored, whatever the daemon
  // blocks (SIGINT, SIGTERM for its signal thread) or ignores (SIGPIPE).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, every;
  sigemptyset(&none);
  sigfillset(&every);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &every);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = Spawner::instance().run(
      [&] { return ::posix_spawn(&pid, exe.c_str(), &actions, &attr, argv.data(), environ); });
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return internal_error("cannot start " + exe + ": " + std::strerror(rc));
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, std::move(ends.first)));
}

Result<FrameChannel> ChildProcess::parent_channel() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return unavailable("the parent process is gone");
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

void ChildProcess::reap(bool block) {
  if (reaped_ || pid_ < 0) return;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    reaped_ = true;
    wait_status_ = r == pid_ ? status : 0;
  }
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
  ::kill(pid_, SIGKILL);
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
