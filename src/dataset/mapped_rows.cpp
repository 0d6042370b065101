#include "dataset/mapped_rows.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace lizard {

Result<std::shared_ptr<const MappedRows>> MappedRows::open(const std::string& path,
                                                           FileFormat format, DType dtype,
                                                           int64_t width) {
  LIZARD_ASSIGN_OR_RETURN(InputFile file, InputFile::open(path));
  LIZARD_ASSIGN_OR_RETURN(BinaryRows layout, binary_rows(file, format, dtype, width));
  const size_t length = static_cast<size_t>(layout.data_offset +
                                            layout.row_bytes * static_cast<uint64_t>(layout.rows));
  void* p = nullptr;
  if (length > 0) {
    p = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, file.fd(), 0);
    if (p == MAP_FAILED) return internal_error("cannot map " + path + ": " + std::strerror(errno));
    ::madvise(p, length, MADV_SEQUENTIAL);
  }
  // The mapping keeps the file once `file` closes it.
  return std::shared_ptr<const MappedRows>(
      new MappedRows(path, layout, static_cast<const char*>(p), length));
}

MappedRows::MappedRows(std::string path, BinaryRows layout, const char* base, size_t length)
    : path_(std::move(path)), layout_(layout), base_(base), length_(length) {}

MappedRows::~MappedRows() {
  if (base_) ::munmap(const_cast<char*>(base_), length_);
}

Result<std::string_view> MappedRows::rows(int64_t first, int64_t n) const {
  if (first < 0 || n < 0 || first > layout_.rows - n)
    return invalid_argument(path_ + ": rows " + std::to_string(first) + ".." +
                            std::to_string(first + n) + " are not in the file's " +
                            std::to_string(layout_.rows) + " rows");
  if (n == 0) return std::string_view();
  const uint64_t offset = layout_.data_offset + static_cast<uint64_t>(first) * layout_.row_bytes;
  return std::string_view(base_ + offset, static_cast<size_t>(n) * layout_.row_bytes);
}

}  // namespace lizard
