#include "common/lent_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "common/errno_error.h"

namespace lizard {
namespace {

// What keeps a borrower's mapping whole; writes stay allowed.
constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW;
// Files grow in steps of this much, so that sizes near each other share one.
constexpr size_t kFileStep = size_t{2} << 20;

}  // namespace

MemoryLender::MemoryLender(size_t max_files, size_t max_file_bytes)
    : max_files_(max_files), max_file_bytes_(max_file_bytes) {}

MemoryLender::~MemoryLender() {
  for (File& f : files_) drop(&f);
}

Status MemoryLender::make_file(size_t bytes, File* f) {
  const size_t size = (bytes + kFileStep - 1) / kFileStep * kFileStep;
  OwnedFd fd(::memfd_create("lizard-lent", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (fd.get() < 0) return errno_error("memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) return errno_error("ftruncate");
  if (::fcntl(fd.get(), F_ADD_SEALS, kSizeSeals | F_SEAL_SEAL) != 0) return errno_error("sealing");
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return errno_error("mmap");
  f->fd = std::move(fd);
  f->data = static_cast<char*>(p);
  f->size = size;
  return Status::Ok();
}

void MemoryLender::drop(File* f) {
  if (f->data) ::munmap(f->data, f->size);
  f->data = nullptr;
  f->fd.reset();
}

Result<MemoryLender::Loan> MemoryLender::lend(size_t bytes,
                                              const std::function<Status(char* to)>& fill) {
  if (bytes == 0 || bytes > max_file_bytes_)
    return unavailable("no file to lend for " + std::to_string(bytes) + " bytes");
  // The smallest free file that holds them; else a free one too small is
  // replaced, or one more made.
  File* use = nullptr;
  File* small = nullptr;
  for (File& f : files_) {
    if (f.lent) continue;
    if (f.size >= bytes && (!use || f.size < use->size)) use = &f;
    if (f.size < bytes) small = &f;
  }
  if (!use && small) {
    drop(small);
    use = small;
  } else if (!use && files_.size() < max_files_) {
    use = &files_.emplace_back();
  }
  if (!use) return unavailable("every file is lent");
  if (!use->data) {
    Status made = make_file(bytes, use);
    if (!made.ok()) {
      files_.erase(files_.begin() + (use - files_.data()));
      return made;
    }
    use->id = next_id_++;
  }
  LIZARD_RETURN_IF_ERROR(fill(use->data));
  use->lent = true;
  return Loan{use->id, use->fd.get()};
}

void MemoryLender::returned(const std::vector<uint64_t>& ids) {
  for (File& f : files_)
    if (std::find(ids.begin(), ids.end(), f.id) != ids.end()) f.lent = false;
}

Result<std::shared_ptr<const BorrowedMemory>> BorrowedMemory::map(OwnedFd fd, size_t bytes,
                                                                  std::function<void()> on_return) {
  const int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & kSizeSeals) != kSizeSeals)
    return invalid_argument("the lent bytes are not a memory file sealed against resizing");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno_error("fstat");
  if (static_cast<uint64_t>(st.st_size) < bytes)
    return invalid_argument("the lent memory file has " + std::to_string(st.st_size) +
                            " bytes, fewer than the " + std::to_string(bytes) + " announced");
  if (bytes == 0)
    return std::shared_ptr<const BorrowedMemory>(
        new BorrowedMemory(nullptr, 0, std::move(on_return)));
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (p == MAP_FAILED) return errno_error("mmap");
  return std::shared_ptr<const BorrowedMemory>(
      new BorrowedMemory(static_cast<const char*>(p), bytes, std::move(on_return)));
}

BorrowedMemory::~BorrowedMemory() {
  if (data_) ::munmap(const_cast<char*>(data_), size_);
  if (on_return_) on_return_();
}

}  // namespace lizard
