// Lent memory: memory files (memfd) that one process fills again and again
// and lends to another process for each fill, so that large replies (a
// run's output fields, from an executor process to its worker) are written
// into pages that are already there: a fresh memory file's pages are
// allocated and zeroed, one fault at a time, as the fill first writes them,
// which costs more than the copy itself.
//
// A file stays lent until the borrower gives it back, by id, in a later
// request; until then the lender fills another one (at most max_files), or
// says it has none and the caller uses SealedMemory.  So a reply is never
// overwritten while its borrower still reads it.
//
// The borrower checks what it maps: a memory file sealed against shrinking
// and growing, at least as large as announced, so that its mapping can never
// lose pages under it (a read past a shrunken file's end would kill the
// borrower).  Unlike SealedMemory its bytes may still change under the
// borrower: it is for bytes the borrower passes on unread (a run's own
// outputs, which only that run's code writes), never for what it parses.
//
//   // The lender (one per process):
//   MemoryLender lender;
//   lender.returned(ids);                                // from the request
//   auto loan = lender.lend(bytes, [&](char* to) { return fill(to); });
//   if (loan.ok()) channel.send_with_descriptor(parts, n, loan->fd);  // and loan->id
//   // The borrower, with the descriptor that came with the reply:
//   auto mapped = BorrowedMemory::map(std::move(fd), bytes, [=] { give_back(id); });
//   std::string_view view = (*mapped)->bytes();  // valid while *mapped lives
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "common/owned_fd.h"
#include "common/status.h"

namespace lizard {

class MemoryLender {
 public:
  struct Loan {
    uint64_t id = 0;
    int fd = -1;  // the lender's; valid while the lender lives
  };
  // At most `max_files` files, each of at most `max_file_bytes`.
  explicit MemoryLender(size_t max_files = 2, size_t max_file_bytes = size_t{1} << 30);
  MemoryLender(const MemoryLender&) = delete;
  MemoryLender& operator=(const MemoryLender&) = delete;
  ~MemoryLender();

  // A file of at least `bytes` that is not lent, filled by `fill` (given the
  // start of its writable mapping) and lent from now on.  kUnavailable, with
  // `fill` not called, when every file is lent or `bytes` is too large.
  Result<Loan> lend(size_t bytes, const std::function<Status(char* to)>& fill);
  // The borrower is done with these loans; ids it never lent are ignored.
  void returned(const std::vector<uint64_t>& ids);
  // How many files it holds, lent or not.
  size_t files() const { return files_.size(); }

 private:
  struct File {
    uint64_t id = 0;
    OwnedFd fd;
    char* data = nullptr;
    size_t size = 0;
    bool lent = false;
  };
  static Status make_file(size_t bytes, File* f);
  static void drop(File* f);

  const size_t max_files_;
  const size_t max_file_bytes_;
  std::vector<File> files_;
  uint64_t next_id_ = 1;
};

class BorrowedMemory {
 public:
  // Maps the memory file `fd` (owned from now on) read-only, once checked:
  // sealed against shrinking and growing, and of at least `bytes`.
  // `on_return` runs when the mapping goes (the last owner let it go).
  static Result<std::shared_ptr<const BorrowedMemory>> map(OwnedFd fd, size_t bytes,
                                                           std::function<void()> on_return);

  BorrowedMemory(const BorrowedMemory&) = delete;
  BorrowedMemory& operator=(const BorrowedMemory&) = delete;
  ~BorrowedMemory();

  std::string_view bytes() const { return {data_, size_}; }

 private:
  BorrowedMemory(const char* data, size_t size, std::function<void()> on_return)
      : data_(data), size_(size), on_return_(std::move(on_return)) {}
  const char* data_ = nullptr;
  size_t size_ = 0;
  std::function<void()> on_return_;
};

}  // namespace lizard
