// UploadPipeline: an upload's body from the io thread to its UploadSink
// (server/transport.h) without blocking the io thread.  The io thread reads
// the socket straight into one of its buffers (16 of 1 MiB, allocated once); a
// thread of the upload's own hands each full buffer to the sink (digest and
// disk write), then gives it back.  When every buffer is in flight the io
// thread stops reading until one is free, so a slow disk slows the sender
// and nothing piles up in memory.  A sink that fails (a full disk) ends the
// upload: later bytes are dropped and finish() reports the failure.
//
// Called from one thread (the connection's); `on_free` and `done` are
// called from the pipeline's thread.  Destroying it before finish()'s `done`
// abandons the upload: its thread drops the sink (which removes the file)
// after the write under way, without making the caller wait for it.
//
//   UploadPipeline p(std::move(sink));
//   UploadPipeline::Span s = p.acquire([] { /* a buffer is free: acquire again */ });
//   ... read n bytes into s.data ...; p.submit(n);
//   p.finish([](Status st) { /* the sink is finished (or failed) */ });
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "common/status.h"
#include "server/transport.h"

namespace lizard {

class UploadPipeline {
 public:
  static constexpr size_t kBuffers = 16;
  static constexpr size_t kBufferBytes = size_t{1} << 20;

  struct Span {
    char* data = nullptr;  // nullptr: no buffer is free (or the upload failed)
    size_t size = 0;
  };

  explicit UploadPipeline(std::unique_ptr<UploadSink> sink, size_t buffers = kBuffers,
                          size_t buffer_bytes = kBufferBytes);
  ~UploadPipeline();
  UploadPipeline(const UploadPipeline&) = delete;
  UploadPipeline& operator=(const UploadPipeline&) = delete;

  // A buffer to fill, or an empty Span when all are in flight: then
  // `on_free` is called once one is (or the upload failed).
  Span acquire(std::function<void()> on_free);
  // The acquired buffer holds `n` bytes (0 < n <= its size): to the sink.
  void submit(size_t n);
  // Whether the sink has refused bytes; failure() says why.
  bool failed() const;
  Status failure() const;
  // After the last submit: `done` gets the sink's finish() (or its first
  // failure) once every buffer has been written.
  void finish(std::function<void(Status)> done);
  // The sink's file and, once `done` said ok, its digest.
  const std::string& path() const { return path_; }
  std::string digest() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::string path_;
  char* acquired_ = nullptr;
};

}  // namespace lizard
