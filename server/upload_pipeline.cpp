#include "server/upload_pipeline.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace lizard {

struct UploadPipeline::State {
  std::mutex mu;
  std::condition_variable cv;
  std::unique_ptr<UploadSink> sink;  // the thread's alone
  std::vector<std::unique_ptr<char[]>> buffers;
  size_t buffer_bytes = 0;
  // GUARDED_BY(mu):
  std::deque<char*> free;
  std::deque<std::pair<char*, size_t>> full;
  std::function<void()> on_free;
  std::function<void(Status)> done;
  bool finishing = false;
  bool abandoned = false;
  Status failure;
  std::string digest;
  std::thread thread;

  // The pipeline's thread: the full buffers to the sink in order, then its finish.
  void run() {
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      cv.wait(l, [&] { return abandoned || !full.empty() || finishing; });
      if (abandoned) break;
      if (full.empty()) {
        end(l);
        break;
      }
      auto [data, size] = full.front();
      full.pop_front();
      const bool write = failure.ok();
      l.unlock();
      Status st = write ? sink->write(data, size) : Status::Ok();
      l.lock();
      if (!st.ok() && failure.ok()) failure = std::move(st);
      free.push_back(data);
      if (auto wake = std::exchange(on_free, nullptr)) {
        l.unlock();
        wake();
        l.lock();
      }
    }
    l.unlock();
    sink.reset();  // unfinished: the sink removes its file
  }

  void end(std::unique_lock<std::mutex>& l) {
    Status st = failure;
    l.unlock();
    if (st.ok()) st = sink->finish();
    std::string hex = st.ok() ? sink->digest() : "";
    l.lock();
    if (!st.ok() && failure.ok()) failure = st;
    digest = std::move(hex);
    auto report = std::exchange(done, nullptr);
    l.unlock();
    if (report) report(std::move(st));
    l.lock();
  }
};

UploadPipeline::UploadPipeline(std::unique_ptr<UploadSink> sink, size_t buffers,
                               size_t buffer_bytes)
    : state_(std::make_shared<State>()), path_(sink->path()) {
  state_->sink = std::move(sink);
  state_->buffer_bytes = buffer_bytes;
  for (size_t i = 0; i < buffers; ++i) {
    state_->buffers.emplace_back(new char[buffer_bytes]);
    state_->free.push_back(state_->buffers.back().get());
  }
  state_->thread = std::thread([s = state_] { s->run(); });
}

UploadPipeline::~UploadPipeline() {
  {
    std::lock_guard<std::mutex> l(state_->mu);
    state_->abandoned = true;  // a no-op once finished
    state_->on_free = nullptr;
    state_->done = nullptr;
  }
  state_->cv.notify_all();
  state_->thread.detach();  // it ends after the write under way, holding the state
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
  return {acquired_, state_->buffer_bytes};
}

void UploadPipeline::submit(size_t n) {
  {
    std::lock_guard<std::mutex> l(state_->mu);
    state_->full.emplace_back(std::exchange(acquired_, nullptr), n);
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
