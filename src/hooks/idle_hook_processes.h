// IdleHookProcesses: the hook processes a daemon keeps idle between runs, so
// that a program's next run does not wait for one to start, shared by all the
// daemon's programs and bounded: at most kPerProgram for one program and
// capacity() in all.  Keeping one more than that ends the one idle longest,
// of whichever program; a program that goes (HostHooks' destructor) ends
// all of its own.  Thread-safe.
//
//   IdleHookProcesses::instance().set_capacity(16);          // --idle-hook-processes
//   IdleHookProcesses::instance().keep(this, std::move(p));   // a run ended well
//   std::unique_ptr<HookProcess> p = IdleHookProcesses::instance().take(this);
//   IdleHookProcesses::instance().drop(this);                 // the program went
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>

#include "hooks/hook_process.h"

namespace lizard {

class IdleHookProcesses {
 public:
  static constexpr size_t kPerProgram = 4;
  static constexpr size_t kDefaultCapacity = 16;

  IdleHookProcesses() = default;
  IdleHookProcesses(const IdleHookProcesses&) = delete;
  IdleHookProcesses& operator=(const IdleHookProcesses&) = delete;

  // The daemon's pool.
  static IdleHookProcesses& instance();

  // At most `n` idle in all (0: none kept); ends the longest idle at once
  // when more are.
  void set_capacity(size_t n);
  size_t capacity() const;

  // Keeps `process` idle for `owner` (a program's HostHooks).
  void keep(const void* owner, std::unique_ptr<HookProcess> process);
  // The process `owner` kept most recently, or null.
  std::unique_ptr<HookProcess> take(const void* owner);
  // Ends every process `owner` keeps.
  void drop(const void* owner);

  size_t size() const;
  size_t size(const void* owner) const;

 private:
  struct Idle {
    const void* owner;
    std::unique_ptr<HookProcess> process;
  };
  // Moves the processes over the bounds into `ended` (oldest first).
  void trim(std::list<Idle>* ended);

  mutable std::mutex mu_;
  size_t capacity_ = kDefaultCapacity;  // GUARDED_BY(mu_)
  std::list<Idle> idle_;                // GUARDED_BY(mu_), longest idle first
};

}  // namespace lizard
