// KeptHostRows: input rows the CPU backend keeps in host memory between runs,
// held in a memory file (memfd), so that a later run uses them in place
// rather than copying them.  Each run maps them copy-on-write (RowsView, a
// private mapping): its kernels may write into their input rows, which
// changes that run's pages and never the kept rows, and a run over 64 MiB of
// kept rows begins without touching them (pages are shared until written).
// Once filled, the memory file is sealed against writes and resizing.
//
//   auto kept = KeptHostRows::make(rows.size(), [&](uint8_t* to) { copy(rows, to); });
//   Result<RowsView> view = kept->view_for_run();   // per run
//   kernel(view->data());                           // writes stay in this view
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "common/status.h"

namespace lizard {

// One run's copy-on-write mapping of kept rows; unmapped when it goes.
class RowsView {
 public:
  RowsView() = default;
  RowsView(uint8_t* data, size_t size) : data_(data), size_(size) {}
  RowsView(RowsView&& o) noexcept;
  RowsView& operator=(RowsView&& o) noexcept;
  RowsView(const RowsView&) = delete;
  RowsView& operator=(const RowsView&) = delete;
  ~RowsView();

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

class KeptHostRows {
 public:
  // A memory file of `size` bytes that `fill` writes through a shared
  // mapping (given its start); an error when the file cannot be made or
  // `fill` fails.
  static Result<KeptHostRows> make(size_t size, const std::function<Status(uint8_t*)>& fill);
  KeptHostRows(KeptHostRows&& o) noexcept;
  KeptHostRows& operator=(KeptHostRows&& o) noexcept;
  KeptHostRows(const KeptHostRows&) = delete;
  KeptHostRows& operator=(const KeptHostRows&) = delete;
  ~KeptHostRows();

  size_t size() const { return size_; }
  // A private, writable mapping of the rows for one run.
  Result<RowsView> view_for_run() const;

 private:
  KeptHostRows(int fd, size_t size) : fd_(fd), size_(size) {}
  int fd_ = -1;
  size_t size_ = 0;
};

}  // namespace lizard
