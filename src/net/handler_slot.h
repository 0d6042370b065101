// HandlerSlot: memory for the one handler that a thread outside the io
// thread posts at a time, so that handing work to the io thread does not
// allocate once per message.  A post from a thread that is not running the
// io_context allocates its handler with operator new (Asio recycles handler
// memory only for its own threads); a handler whose `allocator_type` is a
// SlotAllocator over a kept slot takes the slot instead.  Should a second
// handler be posted while the first still holds the slot, it is allocated
// as usual.
//
//   struct Flush {
//     Owner* owner;
//     using allocator_type = SlotAllocator<void>;
//     allocator_type get_allocator() const noexcept { return allocator_type(&owner->slot); }
//     void operator()() const { owner->flush(); }
//   };
//   net::post(executor, Flush{this});
#pragma once

#include <atomic>
#include <cstddef>
#include <new>

namespace lizard {

class HandlerSlot {
 public:
  void* allocate(size_t n) {
    if (n <= sizeof storage_ && !used_.exchange(true)) return storage_;
    return ::operator new(n);
  }
  void deallocate(void* p) {
    if (p == storage_)
      used_ = false;
    else
      ::operator delete(p);
  }

 private:
  alignas(std::max_align_t) unsigned char storage_[256];
  std::atomic<bool> used_{false};
};

// A standard allocator over a HandlerSlot, for a handler's allocator_type.
template <typename T>
struct SlotAllocator {
  using value_type = T;
  explicit SlotAllocator(HandlerSlot* s) : slot(s) {}
  template <typename U>
  SlotAllocator(const SlotAllocator<U>& o) : slot(o.slot) {}  // NOLINT: rebinding
  T* allocate(size_t n) { return static_cast<T*>(slot->allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t) { slot->deallocate(p); }
  template <typename U>
  bool operator==(const SlotAllocator<U>& o) const {
    return slot == o.slot;
  }
  template <typename U>
  bool operator!=(const SlotAllocator<U>& o) const {
    return slot != o.slot;
  }
  HandlerSlot* slot;
};

}  // namespace lizard
