// FakeWorker: a worker that speaks the wire protocol from inside a test, so
// that what it reports (its executors, their free memory and load) is under
// the test's control.  It builds every program it is sent and runs nothing:
// it answers no run_start, or with `Answers::kRunStart` says its rows are
// loaded and then answers no iteration; or, given an OnMessage, answers
// each message of a run (run_start, iterate, ...) as the test writes it,
// malformed answers included.  Its connection answers pings.
//
//   FakeWorker w(c.port(), "gpu-node", {gpu_executor()});
//   w.send(MessageType::kResources, {{"free_memory", {1 << 20}}, {"utilization", {90}}});
//   FakeWorker stuck(c.port(), "stuck", {cpu}, FakeWorker::Answers::kRunStart);
//   FakeWorker odd(c.port(), "odd", {cpu}, [](FakeWorker& w, const Message& m) {
//     if (m.type == MessageType::kRunStart) w.send(MessageType::kRunReady, {{"run_id", ...}});
//   });
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/worker_connection.h"
#include "exec/executor.h"
#include "protocol/wire.h"

namespace lizard {

class FakeWorker {
 public:
  enum class Answers { kNothing, kRunStart };
  // Called on the connection's thread for each message other than a program.
  using OnMessage = std::function<void(FakeWorker& self, const Message& m)>;

  FakeWorker(uint16_t port, const std::string& hostname, const std::vector<ExecutorInfo>& executors,
             OnMessage on_message)
      : FakeWorker(port, hostname, executors, Answers::kNothing) {
    on_message_ = std::move(on_message);
  }

  FakeWorker(uint16_t port, const std::string& hostname, const std::vector<ExecutorInfo>& executors,
             Answers answers = Answers::kNothing)
      : answers_(answers) {
    nlohmann::json ex = nlohmann::json::array();
    for (const auto& e : executors) ex.push_back(e.to_json());
    const nlohmann::json hello = {{"hostname", hostname},
                                  {"version", LIZARD_VERSION},
                                  {"backend", executors.empty() ? "none" : executors[0].kind},
                                  {"executors", ex}};
    conn_ = std::make_unique<WorkerConnection>(
        "127.0.0.1", port, "",
        ConnectionCallbacks{[this, hello] { send(MessageType::kHello, hello); },
                            [this](std::string frame) { on_frame(frame); }, nullptr, nullptr});
    conn_->start();
  }
  ~FakeWorker() { conn_->stop(); }

  void send(MessageType t, const nlohmann::json& header) {
    conn_->send(encode(Message{t, header, ""}));
  }
  void send(const Message& m) { conn_->send(encode(m)); }

 private:
  void on_frame(const std::string& frame) {
    auto m = decode(frame);
    if (m.ok() && m->type == MessageType::kProgram)
      return send(MessageType::kProgramStatus,
                  {{"hash", m->header.value("hash", "")}, {"ok", true}, {"error", ""}});
    if (m.ok() && on_message_) return on_message_(*this, *m);
    if (m.ok() && m->type == MessageType::kRunStart && answers_ == Answers::kRunStart)
      send(MessageType::kRunReady, {{"run_id", m->header.value("run_id", "")},
                                    {"ok", true},
                                    {"error", ""},
                                    {"compile_ms", 0},
                                    {"compile_cache_hit", true}});
  }

  Answers answers_;
  OnMessage on_message_;
  std::unique_ptr<WorkerConnection> conn_;
};

// A CPU executor as a fake worker reports it: 2 threads, 8 GiB, 4 GiB free.
inline ExecutorInfo fake_cpu() {
  ExecutorInfo e;
  e.kind = "cpu";
  e.name = "fake";
  e.sm_count = 2;
  e.weight = 1;
  e.total_memory = uint64_t{8} << 30;
  e.free_memory = uint64_t{4} << 30;
  return e;
}

}  // namespace lizard
