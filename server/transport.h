// The seam between the network layer (hub_server.cpp, the only server file
// that sees Boost.Beast) and the coordinator: plain request/response values
// and a thread-safe handle on one worker connection.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "common/status.h"
#include "net/outgoing_frame.h"

namespace lizard {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query, e.g. "/runtime/ab12?wait=1"
  std::string body;
  std::string body_file;  // set instead of `body` when the body was streamed to a file
  // For a streamed body: seconds from the start of its reading to its last byte.
  double body_seconds = 0;
  // For a streamed body: its PieceDigest (common/piece_digest.h), hex.
  std::string body_digest;
  // Not ok when the streamed body could not be stored (a full disk gives
  // kStorageFull); its file is gone and the request is answered with this.
  Status body_status;
  std::map<std::string, std::string> headers;  // lower-case names
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // More of the body, after `body`: bytes that lie elsewhere (a run's output
  // field, kept alive by `body_tail_owner`), sent from there, not copied in.
  std::string_view body_tail = {};
  std::shared_ptr<const void> body_tail_owner = {};
};

// Where a request body streamed to disk (POST /datasets) goes, chunk by chunk
// as it arrives.  Destroyed before finish() succeeded, it removes its file.
class UploadSink {
 public:
  virtual ~UploadSink() = default;
  // The file the body is written to (HttpRequest::body_file).
  virtual const std::string& path() const = 0;
  // Appends the next bytes.  An error (kStorageFull for a full disk) ends the
  // upload: the file is removed at once.
  virtual Status write(const char* data, size_t size) = 0;
  // After the last bytes: closes the file; an error removes it as write()
  // does.  Whoever reads the body digests it (UploadPipeline, UploadBody),
  // and the store puts the file on disk once it is committed
  // (server/upload_syncer.h).
  virtual Status finish() = 0;
};

// Sends the response for one request; callable once, from any thread.
using Responder = std::function<void(HttpResponse)>;

// One worker's connection.  Thread-safe; messages are sent in order.
class WorkerLink {
 public:
  virtual ~WorkerLink() = default;
  virtual void send(OutgoingFrame frame) = 0;
  // Bytes queued and not yet written (for pacing large transfers).
  virtual size_t queued_bytes() const = 0;
  virtual void close() = 0;
  virtual std::string peer() const = 0;
  // The largest message the worker may send from now on: a larger one closes
  // the link.  kHelloMessageBytes until its hello is accepted, then
  // kWorkerMessageBytes.
  virtual void set_message_limit(uint64_t bytes) { (void)bytes; }
};

// Until its hello is accepted a connection may send only small messages (a
// hello is a few KiB), and only for kHelloDeadlineS: a peer that upgraded
// and says nothing, or streams a huge frame, holds no memory for long.
constexpr uint64_t kHelloMessageBytes = uint64_t{1} << 20;
constexpr uint64_t kWorkerMessageBytes = uint64_t{16} << 30;
constexpr int kHelloDeadlineS = 10;

// Whether a request's body goes straight to disk: POST /api/v1/datasets, or
// /datasets, its path before /api/v1 (with or without a query).
inline bool is_upload_target(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  return path == "/api/v1/datasets" || path == "/datasets";
}

// The worker daemons' WebSocket: `/hub`.  Workers of earlier versions dial
// `/workers`, which the server still admits.
constexpr std::string_view kWorkerHubPath = "/hub";
inline bool is_worker_hub_target(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  return path == kWorkerHubPath || path == "/workers";
}

// What the network layer calls; implemented by the Coordinator.  Calls come
// from the io thread and must not block.
class ServerHandler {
 public:
  virtual ~ServerHandler() = default;
  virtual void on_http(HttpRequest req, Responder respond) = 0;
  // For a request whose body goes straight to disk (POST /datasets): the sink
  // to stream it into, or the response that refuses it.  Called with headers only.
  virtual std::variant<std::unique_ptr<UploadSink>, HttpResponse> upload_destination(
      const HttpRequest& head) = 0;
  // Whether a worker presenting these (lower-case) headers may join.
  virtual bool authorize_worker(const std::map<std::string, std::string>& headers) = 0;
  virtual std::string on_worker_connect(std::shared_ptr<WorkerLink> link) = 0;  // returns its id
  // Where the buffers of workers' frames come from: the handler gives each
  // back once done with it, so that the frames of every iteration are read
  // without allocating.  Null: each frame is allocated.
  virtual std::shared_ptr<FramePool> received_frames() { return nullptr; }
  virtual void on_worker_frame(const std::string& worker_id, std::string frame) = 0;
  // `why`: "missed heartbeat: ..." or "its connection closed: ...".
  virtual void on_worker_close(const std::string& worker_id, const std::string& why) = 0;
};

}  // namespace lizard
