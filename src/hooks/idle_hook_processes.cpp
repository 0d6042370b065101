#include "hooks/idle_hook_processes.h"

#include <iterator>

namespace lizard {

IdleHookProcesses& IdleHookProcesses::instance() {
  static IdleHookProcesses pool;
  return pool;
}

void IdleHookProcesses::set_capacity(size_t n) {
  std::list<Idle> ended;  // killed outside the lock, as each goes
  std::lock_guard<std::mutex> l(mu_);
  capacity_ = n;
  trim(&ended);
}

size_t IdleHookProcesses::capacity() const {
  std::lock_guard<std::mutex> l(mu_);
  return capacity_;
}

void IdleHookProcesses::keep(const void* owner, std::unique_ptr<HookProcess> process) {
  std::list<Idle> ended;
  std::lock_guard<std::mutex> l(mu_);
  idle_.push_back(Idle{owner, std::move(process)});
  trim(&ended);
}

std::unique_ptr<HookProcess> IdleHookProcesses::take(const void* owner) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = idle_.rbegin(); it != idle_.rend(); ++it) {
    if (it->owner != owner) continue;
    std::unique_ptr<HookProcess> p = std::move(it->process);
    idle_.erase(std::next(it).base());
    return p;
  }
  return nullptr;
}

void IdleHookProcesses::drop(const void* owner) {
  std::list<Idle> ended;
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = idle_.begin(); it != idle_.end();) {
    auto next = std::next(it);
    if (it->owner == owner) ended.splice(ended.end(), idle_, it);
    it = next;
  }
}

size_t IdleHookProcesses::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return idle_.size();
}

size_t IdleHookProcesses::size(const void* owner) const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (const Idle& i : idle_) n += i.owner == owner;
  return n;
}

void IdleHookProcesses::trim(std::list<Idle>* ended) {
  // The newest process's owner may now keep one too many: its oldest go.
  if (!idle_.empty()) {
    const void* owner = idle_.back().owner;
    size_t over = 0;
    for (const Idle& i : idle_) over += i.owner == owner;
    over = over > kPerProgram ? over - kPerProgram : 0;
    for (auto it = idle_.begin(); over > 0 && it != idle_.end();) {
      auto next = std::next(it);
      if (it->owner == owner) {
        ended->splice(ended->end(), idle_, it);
        --over;
      }
      it = next;
    }
  }
  while (idle_.size() > capacity_) ended->splice(ended->end(), idle_, idle_.begin());
}

}  // namespace lizard
