#include "client/session_routes.h"

namespace lizard {

bool routed_type(MessageType type) {
  return type == MessageType::kIterate || type == MessageType::kLoop ||
         type == MessageType::kRunEnd;
}

bool SessionRoutes::deliver(std::string_view run_id, std::string& frame) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = routes_.find(run_id);
  if (it != routes_.end() && it->second.deliver && it->second.queued == 0) {
    it->second.deliver(std::move(frame));
    return true;
  }
  if (it == routes_.end()) it = routes_.emplace(std::string(run_id), Route{}).first;
  ++it->second.queued;
  return false;
}

void SessionRoutes::taken(std::string_view run_id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = routes_.find(run_id);
  if (it == routes_.end()) return;
  if (--it->second.queued <= 0 && !it->second.deliver) routes_.erase(it);
}

void SessionRoutes::add(const std::string& run_id, Deliver deliver) {
  std::lock_guard<std::mutex> l(mu_);
  routes_[run_id].deliver = std::move(deliver);
}

void SessionRoutes::remove(std::string_view run_id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = routes_.find(run_id);
  if (it == routes_.end()) return;
  it->second.deliver = nullptr;
  if (it->second.queued <= 0) routes_.erase(it);
}

}  // namespace lizard
