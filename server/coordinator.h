// Coordinator: the head node's brain.  Implements the REST API and the worker
// hub behind HubServer: registers programs (compiling host hooks and pushing
// sources to workers), tracks workers, validates and queues runs, and drives
// each run's iterations on its own thread.
//
//   Coordinator c({.state_dir = dir});
//   HubServer hub(&c, {...}); hub.start();
//
// Threads: HubServer's io thread calls the ServerHandler methods, which never
// block; program builds and run validation go to a small pool; runs execute
// one at a time, in submission order, on the driver thread.
#pragma once

#include <memory>
#include <string>

#include "server/transport.h"

namespace lizard {

struct CoordinatorOptions {
  std::string state_dir;              // compiled hooks and program bundles live here
  int program_build_timeout_s = 300;  // how long POST /programs waits for workers
  int worker_wait_s = 60;             // how long a run waits for a worker with its program
  std::string token;                  // required of workers and of POST/DELETE requests, when set
  std::string read_token;  // required of GET requests too, when set (the token also works)
};

class Coordinator : public ServerHandler {
 public:
  explicit Coordinator(CoordinatorOptions opts);
  ~Coordinator() override;

  void on_http(HttpRequest req, Responder respond) override;
  bool authorize_worker(const std::map<std::string, std::string>& headers) override;
  std::variant<std::string, HttpResponse> upload_destination(const HttpRequest& head) override;
  std::string on_worker_connect(std::shared_ptr<WorkerLink> link) override;
  void on_worker_frame(const std::string& worker_id, std::string frame) override;
  void on_worker_close(const std::string& worker_id) override;

  // Stops the driver and the pool, fails pending runs and lets the worker
  // links go.  Call it after stopping the network layer, before destroying it.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lizard
