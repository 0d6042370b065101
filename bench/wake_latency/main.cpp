// wake_latency: what handing work from one thread to another costs on this
// machine, the price of every hand-off on lizard's request and iteration
// paths (an io thread to a pool, a driver to its worker's channel, a worker
// to its executor process).  Prints the round-trip time of a ping-pong
// between two threads through a condition variable and through a
// socketpair, with the waiting side asleep (a short pause every tenth round
// lets its core go idle); the same socketpair with both sides polling it
// (a non-blocking recv and sched_yield between tries, as lizard's spin
// waits do) and an atomic in shared memory that both sides poll, which
// separate the system calls' cost from the wake-ups'; and what starting and
// joining a thread costs.
//
//   build/bench/wake_latency [ROUNDS]     # default 5000
#include <sys/socket.h>
#include <unistd.h>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

void print(const char* what, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  const size_t n = us.size();
  std::printf("  %-34s median %6.1f us   p90 %6.1f us   p99 %6.1f us\n", what, us[n / 2],
              us[n * 9 / 10], us[n * 99 / 100]);
}

std::vector<double> condvar_round_trips(int rounds) {
  std::mutex mu;
  std::condition_variable cv;
  int turn = 0;  // 1: the other thread's
  std::thread other([&] {
    for (int i = 0; i < rounds; ++i) {
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return turn == 1; });
      turn = 0;
      cv.notify_one();
    }
  });
  std::vector<double> us;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = Clock::now();
    {
      std::unique_lock<std::mutex> l(mu);
      turn = 1;
      cv.notify_one();
      cv.wait(l, [&] { return turn == 0; });
    }
    us.push_back(us_since(t0));
    if (i % 10 == 0) usleep(200);
  }
  other.join();
  return us;
}

// Receives one byte: a blocking read, or polling (a non-blocking recv, then
// sched_yield, as lizard's spin waits do).
bool receive_byte(int fd, char* c, bool polled) {
  if (!polled) return read(fd, c, 1) == 1;
  for (;;) {
    const ssize_t n = recv(fd, c, 1, MSG_DONTWAIT);
    if (n == 1) return true;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return false;
    sched_yield();
  }
}

// Without polling, a short pause every tenth round lets the waiting side's
// core go idle, as between a daemon's iterations.
std::vector<double> socketpair_round_trips(int rounds, bool polled) {
  int fd[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0) return {0};
  std::thread other([&] {
    char c;
    for (int i = 0; i < rounds; ++i)
      if (!receive_byte(fd[1], &c, polled) || send(fd[1], &c, 1, MSG_NOSIGNAL) != 1) break;
  });
  std::vector<double> us;
  for (int i = 0; i < rounds; ++i) {
    char c = 1;
    const auto t0 = Clock::now();
    if (send(fd[0], &c, 1, MSG_NOSIGNAL) != 1 || !receive_byte(fd[0], &c, polled)) break;
    us.push_back(us_since(t0));
    if (!polled && i % 10 == 0) usleep(200);
  }
  other.join();
  close(fd[0]);
  close(fd[1]);
  return us.empty() ? std::vector<double>{0} : us;
}

std::vector<double> polled_atomic_round_trips(int rounds) {
  alignas(64) std::atomic<int> ping{0};
  alignas(64) std::atomic<int> pong{0};
  std::thread other([&] {
    for (int i = 1; i <= rounds; ++i) {
      while (ping.load(std::memory_order_acquire) != i) relax();
      pong.store(i, std::memory_order_release);
    }
  });
  std::vector<double> us;
  for (int i = 1; i <= rounds; ++i) {
    const auto t0 = Clock::now();
    ping.store(i, std::memory_order_release);
    while (pong.load(std::memory_order_acquire) != i) relax();
    us.push_back(us_since(t0));
  }
  other.join();
  return us;
}

std::vector<double> thread_starts(int rounds) {
  std::vector<double> us;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = Clock::now();
    std::thread t([] {});
    t.join();
    us.push_back(us_since(t0));
  }
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(100, std::atoi(argv[1])) : 5000;
  std::printf("wake_latency: %d rounds, %u hardware threads\n", rounds,
              std::thread::hardware_concurrency());
  print("condition variable round trip", condvar_round_trips(rounds));
  print("socketpair round trip", socketpair_round_trips(rounds, false));
  print("socketpair, both sides polling", socketpair_round_trips(rounds, true));
  print("shared atomic, both sides polling", polled_atomic_round_trips(rounds));
  print("thread start and join", thread_starts(rounds / 2));
  return 0;
}
