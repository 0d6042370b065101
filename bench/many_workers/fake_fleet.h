// FakeFleet: many lightweight workers in one process, for bench/many_workers.
// Each speaks the worker's side of the wire protocol over its own real
// WebSocket to the server's /workers endpoint (net/ws_channel.h, as
// client/worker_connection.cpp opens it): hello, program_status for every
// program pushed, run_ready for a run_start, and an iteration_result for
// every iterate whose aggregate was prepared in advance (set_aggregate()).
// Nothing runs a kernel.
//
// With a fold tree (FleetShape::fold), the workers say they take fold links
// and follow the place each run_start gives them (server/run_fold_tree.h),
// but the fold among them is simulated here rather than sent over links
// between them: the server sends its iterates to the tree's senders only,
// and each answers at once, covering its subtree, as if it had passed the
// iterate down and folded the answers.  So the server sees what a tree gives
// it, and the links between workers cost nothing here (the netns tests run
// them for real).  Workers connect from 127.0.0.1 as one host, or from
// 127.1.x.y loopback addresses `workers_per_host` at a time, as hosts of
// their own.  All workers share one io_context run by a few
// threads, each channel on a strand of its own: no thread per worker.  The
// fleet counts the bytes of the frames it receives and sends.
//
//   FakeFleet fleet("127.0.0.1", port, /*io_threads=*/2, {/*fold=*/true, /*workers_per_host=*/4});
//   fleet.set_aggregate(std::string(4096, '\0'));
//   fleet.connect(256);                     // returns at once; they dial in parallel
//   while (fleet.open() < 256) ...;
//   FleetCounters c = fleet.counters();     // bytes of iterate / iteration_result frames
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace lizard {

struct FleetCounters {
  uint64_t iterates = 0, iterate_bytes = 0;  // iterate frames received, and their bytes
  uint64_t results = 0, result_bytes = 0;    // iteration_result frames sent, and their bytes
  uint64_t frames_in = 0, bytes_in = 0;      // every frame received
  uint64_t frames_out = 0, bytes_out = 0;    // every frame sent
  uint64_t programs = 0;                     // program frames received
  uint64_t failures = 0;                     // connections that failed or closed
};

struct FleetShape {
  bool fold = false;         // say a fold port, and answer as the run's tree says
  int workers_per_host = 0;  // workers sharing one loopback address (0: all of them)
};

class FakeFleet {
 public:
  FakeFleet(std::string host, uint16_t port, int io_threads, FleetShape shape = {});
  ~FakeFleet();  // aborts every connection and joins the io threads
  FakeFleet(const FakeFleet&) = delete;
  FakeFleet& operator=(const FakeFleet&) = delete;

  // Every iteration_result from now on carries `aggregate` as its payload.
  void set_aggregate(std::string aggregate);
  // Dials `n` more workers (hostnames fake-0, fake-1, ...); returns at once.
  void connect(int n);
  // Workers whose WebSocket is open.
  int open() const;
  FleetCounters counters() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace lizard
