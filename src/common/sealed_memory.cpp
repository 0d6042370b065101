#include "common/sealed_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "common/errno_error.h"

namespace lizard {
namespace {

constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

}  // namespace

Result<SealedMemory> SealedMemory::make(size_t bytes, const std::function<Status(char* to)>& fill) {
  OwnedFd fd(::memfd_create("lizard-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (fd.get() < 0) return errno_error("memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return errno_error("ftruncate");
  if (bytes > 0) {
    // Not populated: allocating its pages as the fill writes them is cheaper.
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return errno_error("mmap");
    Status filled = fill(static_cast<char*>(p));
    ::munmap(p, bytes);  // a writable mapping would keep the write seal off
    LIZARD_RETURN_IF_ERROR(filled);
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, kSeals | F_SEAL_SEAL) != 0) return errno_error("sealing");
  return SealedMemory(std::move(fd), bytes);
}

Result<std::shared_ptr<const MappedSealedMemory>> MappedSealedMemory::map(OwnedFd fd,
                                                                          size_t bytes) {
  const int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals)
    return invalid_argument("the shared bytes are not a sealed memory file");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno_error("fstat");
  if (static_cast<uint64_t>(st.st_size) != bytes)
    return invalid_argument("the shared bytes are " + std::to_string(st.st_size) +
                            " bytes, not the " + std::to_string(bytes) + " announced");
  if (bytes == 0)
    return std::shared_ptr<const MappedSealedMemory>(new MappedSealedMemory(nullptr, 0));
  // Its pages are mapped now, at once, rather than faulted in one by one.
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (p == MAP_FAILED) return errno_error("mmap");
  return std::shared_ptr<const MappedSealedMemory>(
      new MappedSealedMemory(static_cast<const char*>(p), bytes));
}

MappedSealedMemory::~MappedSealedMemory() {
  if (data_) ::munmap(const_cast<char*>(data_), size_);
}

}  // namespace lizard
