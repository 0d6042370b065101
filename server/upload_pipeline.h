// UploadPipeline: an upload's body from the io thread to its UploadSink
// (server/transport.h) without blocking the io thread.  The io thread reads
// the socket straight into one of its buffers (64 of 1 MiB, allocated once);
// a writer thread of the upload's own hands each full buffer to the sink (the
// disk write) in order, while hashing threads digest the bytes: each 16 MiB
// piece of the PieceDigest (common/piece_digest.h) on the thread of its
// number, so that several pieces are hashed at once and the digest keeps up
// with the link.  A buffer is free again once it is both written and hashed.
// When every buffer is in flight the io thread stops reading until one is
// free, so a slow disk slows the sender and nothing piles up in memory.  A
// sink that fails (a full disk) ends the upload: later bytes are dropped and
// finish() reports the failure.
//
// Called from one thread (the connection's); `on_free` and `done` are
// called from the pipeline's threads.  Destroying it before finish()'s
// `done` abandons the upload: the writer drops the sink (which removes the
// file) after the write under way, without making the caller wait for it;
// the hashing threads, which stop within one buffer, are joined, so that
// none outlives its pipeline (a daemon that exits then finds none running).
//
//   UploadPipeline p(std::move(sink));
//   UploadPipeline::Span s = p.acquire([] { /* a buffer is free: acquire again */ });
//   ... read n bytes into s.data ...; p.submit(n);
//   p.finish([](Status st) { /* the sink is finished (or failed); p.digest() */ });
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "server/transport.h"

namespace lizard {

class UploadPipeline {
 public:
  static constexpr size_t kBuffers = 64;
  static constexpr size_t kBufferBytes = size_t{1} << 20;

  struct Span {
    char* data = nullptr;  // nullptr: no buffer is free (or the upload failed)
    size_t size = 0;
  };

  // `hashers`: threads digesting pieces; 0 picks by the machine's cores (one
  // on two cores, up to four beside the io and writer threads).
  explicit UploadPipeline(std::unique_ptr<UploadSink> sink, size_t buffers = kBuffers,
                          size_t buffer_bytes = kBufferBytes, size_t hashers = 0);
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
  // failure) once every buffer has been written and hashed.
  void finish(std::function<void(Status)> done);
  // The sink's file and, once `done` said ok, the PieceDigest of the bytes.
  const std::string& path() const { return path_; }
  std::string digest() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::vector<std::thread> hashers_;
  std::string path_;
  size_t acquired_ = 0;  // the buffer acquire() gave out
};

}  // namespace lizard
