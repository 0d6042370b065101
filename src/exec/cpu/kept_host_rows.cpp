#include "exec/cpu/kept_host_rows.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <utility>

#include "common/errno_error.h"

namespace lizard {

RowsView::RowsView(RowsView&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

RowsView& RowsView::operator=(RowsView&& o) noexcept {
  if (this != &o) {
    if (data_) munmap(data_, size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

RowsView::~RowsView() {
  if (data_) munmap(data_, size_);
}

Result<KeptHostRows> KeptHostRows::make(size_t size, const std::function<Status(uint8_t*)>& fill) {
  const int fd = memfd_create("lizard-kept-rows", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return errno_error("memfd_create for kept rows");
  KeptHostRows rows(fd, size);
  if (size > 0) {
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) return errno_error("sizing kept rows");
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return errno_error("mapping kept rows");
    Status filled = fill(static_cast<uint8_t*>(p));
    munmap(p, size);
    if (!filled.ok()) return filled;
  }
  // Sealed once filled: nothing in this process (a kernel that finds the
  // memory file among its descriptors) can write, resize or share-map it
  // again, so later runs read the rows as they were loaded.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return errno_error("sealing kept rows");
  return rows;
}

KeptHostRows::KeptHostRows(KeptHostRows&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), size_(std::exchange(o.size_, 0)) {}

KeptHostRows& KeptHostRows::operator=(KeptHostRows&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

KeptHostRows::~KeptHostRows() {
  if (fd_ >= 0) close(fd_);
}

Result<RowsView> KeptHostRows::view_for_run() const {
  if (size_ == 0) return RowsView();
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd_, 0);
  if (p == MAP_FAILED) return errno_error("mapping kept rows for a run");
  return RowsView(static_cast<uint8_t*>(p), size_);
}

}  // namespace lizard
