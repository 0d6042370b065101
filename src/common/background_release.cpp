#include "common/background_release.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace lizard {
namespace {

class ReleaseThread {
 public:
  ReleaseThread() {
    std::thread([this] { run(); }).detach();
  }

  void take(std::shared_ptr<const void> owner) {
    {
      std::lock_guard<std::mutex> l(mu_);
      queue_.push_back(std::move(owner));
    }
    cv_.notify_one();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      cv_.wait(l, [this] { return !queue_.empty(); });
      std::shared_ptr<const void> owner = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      owner.reset();  // the unmap or free, outside the lock
      l.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<const void>> queue_;
};

ReleaseThread& release_thread() {
  static ReleaseThread* const t = new ReleaseThread;  // never destroyed: its thread runs on
  return *t;
}

// Holds the owner until the reference made for it ends.
struct Held {
  std::shared_ptr<const void> owner;
};

}  // namespace

std::shared_ptr<const void> released_in_background(std::shared_ptr<const void> owner) {
  if (!owner) return nullptr;
  ReleaseThread& to = release_thread();
  return std::shared_ptr<const void>(new Held{std::move(owner)}, [&to](const Held* h) {
    to.take(std::move(const_cast<Held*>(h)->owner));
    delete h;
  });
}

}  // namespace lizard
