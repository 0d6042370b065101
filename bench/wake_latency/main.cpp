// wake_latency: what handing work from one thread to another costs on this
// machine, the price of every hand-off on lizard's request and iteration
// paths (an io thread to a pool, a driver to its worker's channel, a worker
// to its executor process).  Prints the round-trip time of a ping-pong
// between two threads through a condition variable and through a
// socketpair, with the waiting side asleep (a short pause every tenth round
// lets its core go idle), and what starting and joining a thread costs.
//
//   build/bench/wake_latency [ROUNDS]     # default 5000
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

void print(const char* what, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  const size_t n = us.size();
  std::printf("  %-32s median %6.1f us   p90 %6.1f us   p99 %6.1f us\n", what, us[n / 2],
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

std::vector<double> socketpair_round_trips(int rounds) {
  int fd[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0) return {0};
  std::thread other([&] {
    char c;
    for (int i = 0; i < rounds; ++i)
      if (read(fd[1], &c, 1) != 1 || write(fd[1], &c, 1) != 1) break;
  });
  std::vector<double> us;
  for (int i = 0; i < rounds; ++i) {
    char c = 1;
    const auto t0 = Clock::now();
    if (write(fd[0], &c, 1) != 1 || read(fd[0], &c, 1) != 1) break;
    us.push_back(us_since(t0));
    if (i % 10 == 0) usleep(200);
  }
  other.join();
  close(fd[0]);
  close(fd[1]);
  return us.empty() ? std::vector<double>{0} : us;
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
  print("socketpair round trip", socketpair_round_trips(rounds));
  print("thread start and join", thread_starts(rounds / 2));
  return 0;
}
