// Background release: the last reference to a large buffer (a mapping of a
// run's outputs, a heap block of many megabytes) dropped on a thread of its
// own rather than on whichever thread happens to hold it last.  Unmapping or
// freeing 64 MiB takes milliseconds (page tables torn down, TLBs flushed),
// and the thread that drops a sent frame's buffers is an io thread, which
// should go on to its next read or write at once.
//
//   // The frame's owner is dropped by the channel's io thread once written;
//   // `outputs` is then released on the release thread.
//   channel->send(OutgoingFrame(head, views, released_in_background(outputs)));
//
// One release thread per process, started on first use; it lives as long as
// the process, so owners still queued at exit are not released.
#pragma once

#include <memory>

namespace lizard {

// A reference to `owner` whose end hands `owner` to the release thread; null
// for a null owner.
std::shared_ptr<const void> released_in_background(std::shared_ptr<const void> owner);

}  // namespace lizard
