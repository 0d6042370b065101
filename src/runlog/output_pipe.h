// OutputPipe: the read end of a child process's stdout and stderr
// (ChildProcess::spawn with ChildOutput::kCaptured), read by a thread of its
// own so that the child never waits on a full pipe, whatever it prints.
// What it read is held (up to kHeldBytes; more is counted and dropped) until
// the owner takes it.  take() first reads what the pipe holds at that moment,
// so output the child flushed before its answer to a call is all there once
// the answer has arrived: the owner attributes it to that call (a run's
// iteration).
//
//   OutputPipe out(child->take_output_fd());
//   ... a call on the child, answered ...
//   OutputPipe::Taken t = out.take();   // t.bytes, t.dropped
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace lizard {

class OutputPipe {
 public:
  // Most bytes held between two take()s.
  static constexpr size_t kHeldBytes = size_t{2} << 20;

  struct Taken {
    std::string bytes;
    uint64_t dropped = 0;  // bytes read past kHeldBytes and dropped
  };

  // Owns `fd` (closed when it goes); -1: a pipe that never holds anything.
  explicit OutputPipe(int fd);
  ~OutputPipe();
  OutputPipe(const OutputPipe&) = delete;
  OutputPipe& operator=(const OutputPipe&) = delete;

  // What was read since the last take(), and what the pipe holds now.
  Taken take();

 private:
  void read_loop();
  // Reads until the pipe is empty or closed; with mu_ held.
  void drain_locked();

  const int fd_;
  std::mutex mu_;
  std::string held_;      // GUARDED_BY(mu_)
  uint64_t dropped_ = 0;  // GUARDED_BY(mu_)
  bool closed_ = false;   // GUARDED_BY(mu_): the write end is gone
  std::atomic<bool> stop_{false};
  std::thread reader_;
};

}  // namespace lizard
