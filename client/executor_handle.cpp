#include "client/executor_handle.h"

namespace lizard {

Result<ExecutorClaim> ExecutorClaim::take(ExecutorHandle* h, const std::string& owner,
                                          SteadyClock::time_point deadline,
                                          const std::atomic<bool>& stopped) {
  std::unique_lock<std::mutex> l(h->mu);
  const bool free_now =
      h->freed.wait_until(l, deadline, [&] { return h->owner.empty() || stopped; });
  if (stopped) return Status(Code::kCancelled, "stopped while waiting for the executor");
  if (!free_now) return unavailable("still busy with " + h->owner);
  h->owner = owner;
  return ExecutorClaim(h);
}

void ExecutorClaim::reset() {
  if (!h_) return;
  {
    std::lock_guard<std::mutex> l(h_->mu);
    h_->owner.clear();
  }
  h_->freed.notify_all();
  h_ = nullptr;
}

}  // namespace lizard
