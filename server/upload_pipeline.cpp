#include "server/upload_pipeline.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/piece_digest.h"
#include "common/sha256.h"

namespace lizard {
namespace {

// One hasher on two cores (the io and writer threads take the rest); else up
// to four, which digest 16 MiB pieces faster than a link fills them.
size_t default_hashers() {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return cores <= 2 ? 1 : std::min<size_t>(4, cores - 2);
}

}  // namespace

struct UploadPipeline::State {
  // Bytes of one buffer that fall in one piece, for that piece's hasher.
  struct Part {
    size_t buffer = 0;
    const char* data = nullptr;
    size_t size = 0;
    uint64_t piece = 0;
  };
  struct Buffer {
    std::unique_ptr<char[]> bytes;
    int pending = 0;  // the write and the hashes still to do
  };

  std::mutex mu;
  std::condition_variable cv;
  std::unique_ptr<UploadSink> sink;  // the writer's alone
  size_t buffer_bytes = 0;
  // GUARDED_BY(mu):
  std::vector<Buffer> buffers;
  std::deque<size_t> free;
  std::deque<std::pair<size_t, size_t>> to_write;  // buffer, bytes
  std::vector<std::deque<Part>> to_hash;           // one queue per hasher
  std::vector<std::array<uint8_t, 32>> pieces;     // each piece's SHA-256
  uint64_t submitted = 0;                          // bytes
  size_t hashers_left = 0;                         // not yet done after finish()
  std::function<void()> on_free;
  std::function<void(Status)> done;
  bool finishing = false;
  bool abandoned = false;
  Status failure;
  std::string digest;

  // The buffer's write or one of its hashes is done; once all are, it is
  // free again, and a reader waiting for one is told.  Called with `l` held.
  void settle(size_t b, std::unique_lock<std::mutex>& l) {
    if (--buffers[b].pending > 0) return;
    free.push_back(b);
    if (auto wake = std::exchange(on_free, nullptr)) {
      l.unlock();
      wake();
      l.lock();
    }
  }

  // The writer: the full buffers to the sink in order, then, once every
  // piece is hashed, the sink's finish and the digest.
  void write_all() {
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      cv.wait(l, [&] { return abandoned || !to_write.empty() || finishing; });
      if (abandoned) break;
      if (to_write.empty()) {
        cv.wait(l, [&] { return abandoned || hashers_left == 0; });
        if (abandoned) break;
        end(l);
        break;
      }
      auto [b, size] = to_write.front();
      to_write.pop_front();
      const bool write = failure.ok();
      l.unlock();
      Status st = write ? sink->write(buffers[b].bytes.get(), size) : Status::Ok();
      l.lock();
      if (!st.ok() && failure.ok()) failure = std::move(st);
      settle(b, l);
    }
    l.unlock();
    sink.reset();  // unfinished: the sink removes its file
  }

  void end(std::unique_lock<std::mutex>& l) {
    Status st = failure;
    l.unlock();
    if (st.ok()) st = sink->finish();
    l.lock();
    if (!st.ok() && failure.ok()) failure = st;
    if (st.ok()) digest = piece_digest_of(pieces);
    auto report = std::exchange(done, nullptr);
    l.unlock();
    if (report) report(std::move(st));
    l.lock();
  }

  // Hasher `h`: the pieces whose number is h modulo the hashers, each hashed
  // from its parts in order.
  void hash_pieces(size_t h) {
    Sha256 current;
    int64_t piece = -1;
    auto keep = [&] {  // with mu held
      if (piece < 0) return;
      if (pieces.size() <= static_cast<size_t>(piece)) pieces.resize(piece + 1);
      pieces[piece] = current.digest();
    };
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      cv.wait(l, [&] { return abandoned || !to_hash[h].empty() || finishing; });
      if (abandoned) return;
      if (to_hash[h].empty()) {  // finishing: every part was submitted
        if (failure.ok()) keep();
        --hashers_left;
        cv.notify_all();
        return;
      }
      Part part = to_hash[h].front();
      to_hash[h].pop_front();
      const bool hash = failure.ok();
      if (hash && static_cast<int64_t>(part.piece) != piece) {
        keep();
        current = Sha256();
        piece = static_cast<int64_t>(part.piece);
      }
      l.unlock();
      if (hash) current.update(part.data, part.size);
      l.lock();
      settle(part.buffer, l);
    }
  }
};

UploadPipeline::UploadPipeline(std::unique_ptr<UploadSink> sink, size_t buffers,
                               size_t buffer_bytes, size_t hashers)
    : state_(std::make_shared<State>()), path_(sink->path()) {
  if (hashers == 0) hashers = default_hashers();
  state_->sink = std::move(sink);
  state_->buffer_bytes = buffer_bytes;
  state_->buffers.resize(buffers);
  for (size_t i = 0; i < buffers; ++i) {
    state_->buffers[i].bytes.reset(new char[buffer_bytes]);
    state_->free.push_back(i);
  }
  state_->to_hash.resize(hashers);
  state_->hashers_left = hashers;
  // Each thread holds the state, so that an abandoned upload's writer ends
  // on its own after the write under way.
  std::thread([s = state_] { s->write_all(); }).detach();
  for (size_t h = 0; h < hashers; ++h)
    hashers_.emplace_back([s = state_, h] { s->hash_pieces(h); });
}

UploadPipeline::~UploadPipeline() {
  {
    std::lock_guard<std::mutex> l(state_->mu);
    state_->abandoned = true;  // a no-op once finished
    state_->on_free = nullptr;
    state_->done = nullptr;
  }
  state_->cv.notify_all();
  for (std::thread& t : hashers_) t.join();
}

UploadPipeline::Span UploadPipeline::acquire(std::function<void()> on_free) {
  std::lock_guard<std::mutex> l(state_->mu);
  if (!state_->failure.ok()) return {};
  if (state_->free.empty()) {
    state_->on_free = std::move(on_free);
    return {};
  }
  acquired_ = state_->free.front();
  state_->free.pop_front();
  return {state_->buffers[acquired_].bytes.get(), state_->buffer_bytes};
}

void UploadPipeline::submit(size_t n) {
  {
    std::lock_guard<std::mutex> l(state_->mu);
    State& s = *state_;
    State::Buffer& b = s.buffers[acquired_];
    b.pending = 1;
    s.to_write.emplace_back(acquired_, n);
    // Split at the pieces' bounds: each part to the hasher of its piece.
    for (size_t at = 0; at < n;) {
      const uint64_t piece = (s.submitted + at) / PieceDigest::kPieceBytes;
      const uint64_t piece_end = (piece + 1) * PieceDigest::kPieceBytes;
      const size_t size = std::min<uint64_t>(n - at, piece_end - (s.submitted + at));
      s.to_hash[piece % s.to_hash.size()].push_back({acquired_, b.bytes.get() + at, size, piece});
      ++b.pending;
      at += size;
    }
    s.submitted += n;
  }
  state_->cv.notify_all();
}

bool UploadPipeline::failed() const {
  std::lock_guard<std::mutex> l(state_->mu);
  return !state_->failure.ok();
}

Status UploadPipeline::failure() const {
  std::lock_guard<std::mutex> l(state_->mu);
  return state_->failure;
}

void UploadPipeline::finish(std::function<void(Status)> done) {
  {
    std::lock_guard<std::mutex> l(state_->mu);
    state_->done = std::move(done);
    state_->finishing = true;
  }
  state_->cv.notify_all();
}

std::string UploadPipeline::digest() const {
  std::lock_guard<std::mutex> l(state_->mu);
  return state_->digest;
}

}  // namespace lizard
