// Test doubles for driving the server's role modules without sockets.
//
// FakeWorkerLink stands where hub_server.cpp's WebSocket session stands: it
// keeps every frame sent to it (decoded, for assertions) and hands each one
// to an optional callback.  FakeWorker puts a scripted worker daemon behind
// such a link: on a thread of its own, in order, it answers program with
// program_status, run_start with run_ready, iterate with iteration_result and
// run_end with run_outputs, computing aggregates and outputs from the rows it
// was sent through functions the test gives.  Tests make it fail, fall
// silent or vanish at chosen messages with `intercept`.
//
//   FakeWorker w("w1", [&](const std::string& id, Message m) { driver.deliver(...); });
//   w.kernel = [](const FakeRun& run, const IterateMsg& it) { return aggregate_bytes; };
//   registry.connect(w.link());
//   ...
//   EXPECT_EQ(w.link()->sent_of(MessageType::kRunStart).size(), 1u);
//
// make_test_program() builds a program the way POST /programs does, host
// hooks included.  Scratch directories are dataset/test_files.h's TempDir.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/mailbox.h"
#include "dataset/test_files.h"
#include "protocol/messages.h"
#include "server/program_registry.h"
#include "server/transport.h"

namespace lizard::testing {

// Whether `m` is an iterate message for `iteration` (of any attempt).
inline bool is_iterate(const Message& m, int64_t iteration) {
  if (m.type != MessageType::kIterate) return false;
  auto it = IterateMsg::parse(m.packed);
  return it.ok() && it->iteration == iteration;
}

// A program bundle (config.yaml text, kernel.cu empty, host.cpp when given),
// prepared as ProgramRegistry::prepare() prepares it; host hooks are compiled
// into a cache shared by every test process.  Fails the test when it does not build.
std::shared_ptr<ProgramEntry> make_test_program(const std::string& config,
                                                const std::string& host_cpp = "");

class FakeWorkerLink : public WorkerLink {
 public:
  explicit FakeWorkerLink(std::string peer = "127.0.0.1:40000") : peer_(std::move(peer)) {}

  void send(OutgoingFrame frame) override;
  size_t queued_bytes() const override;
  void close() override;
  std::string peer() const override { return peer_; }

  // Called with every frame after it was recorded (on the sender's thread).
  void on_send(std::function<void(const std::string& frame)> f);
  // Called with every frame before on_send's (a FakeWorker's) function: for
  // a test that looks at the server as each frame goes out.
  void watch(std::function<void(const std::string& frame)> f);
  // Pretends `n` bytes wait to be written (for pacing tests).
  void set_queued_bytes(size_t n);

  std::vector<Message> sent() const;  // every frame, decoded, in order
  std::vector<Message> sent_of(MessageType t) const;
  size_t frames() const;
  bool closed() const;
  // Waits until at least `count` messages of type `t` were sent.
  bool wait_for(MessageType t, size_t count,
                std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

 private:
  const std::string peer_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::string> frames_;  // GUARDED_BY(mu_)
  size_t queued_ = 0;                // GUARDED_BY(mu_)
  bool closed_ = false;              // GUARDED_BY(mu_)
  std::function<void(const std::string&)> on_send_;
  std::function<void(const std::string&)> watch_;
};

// What a FakeWorker holds of one run: its run_start and the rows it was sent.
struct FakeRun {
  RunStartMsg start;
  std::map<std::string, std::string> rows;  // inline and chunked fields, by name
};

class FakeWorker {
 public:
  // `deliver` receives each reply, as the hub would hand it to the server.
  using Deliver = std::function<void(const std::string& worker_id, Message reply)>;
  FakeWorker(std::string id, Deliver deliver);
  ~FakeWorker();
  FakeWorker(const FakeWorker&) = delete;
  FakeWorker& operator=(const FakeWorker&) = delete;

  const std::string& id() const { return id_; }
  const std::shared_ptr<FakeWorkerLink>& link() const { return link_; }
  // A hello reporting `executors` executors of weight 1 (and free memory `free_bytes`).
  HelloMsg hello(size_t executors = 1, uint64_t free_bytes = 0) const;

  // The worker's behaviour; set before the first message arrives.
  // Aggregate payload for one iteration; empty by default.
  std::function<std::string(const FakeRun&, const IterateMsg&)> kernel;
  // One output field's bytes for the worker's rows; empty by default.
  std::function<std::string(const FakeRun&, const std::string& field)> output;
  // One step of a loop this worker drives (see MessageType::kLoop): the
  // aggregate then the state after iteration `it`, and whether it is the
  // last.  Unset: the worker answers that it cannot drive loops.
  std::function<std::string(const FakeRun&, const std::string& state, int64_t it, bool* last)>
      loop_step;
  // Sees each message first; true: it is handled (the worker does not answer).
  std::function<bool(const Message&)> intercept;
  // Its results say that its first `quick_iterations` iterations ran on a
  // quick build (IterationResultMsg::quick_build).
  int64_t quick_iterations = 0;
  // Whether a pushed program builds, and the error when it does not.
  bool builds = true;
  std::string build_error = "nvrtc: error in kernel.cu";

  // Stops answering (the worker's messages after this are dropped).
  void go_silent();
  // Waits until every frame sent so far has been handled.
  void drain();

 private:
  void handle(const std::string& frame);
  void drive_loop(const Message& m);
  void answer(Message m);

  const std::string id_;
  Deliver deliver_;
  std::shared_ptr<FakeWorkerLink> link_;
  Mailbox<std::string> inbox_;
  std::mutex mu_;
  std::condition_variable idle_;
  size_t received_ = 0, handled_ = 0;  // GUARDED_BY(mu_)
  bool silent_ = false;                // GUARDED_BY(mu_)
  std::map<std::string, FakeRun> runs_;
  std::map<std::string, std::string>
      cached_;  // uploaded rows, by upload and rows  // by wire id; the worker's thread only
  std::map<std::string, std::map<uint64_t, std::string>> chunks_;  // wire id → field → rows
  std::thread thread_;
};

}  // namespace lizard::testing
