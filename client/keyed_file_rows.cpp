#include "client/keyed_file_rows.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace lizard {

Result<FileRowsKey> open_file_rows_key(const DataRoots& roots, const DataRoots* also,
                                       const std::string& path, FileFormat format, DType dtype,
                                       int64_t width, int64_t first_row, int64_t rows) {
  auto opened = roots.open(path, also);
  if (!opened.ok()) return opened.status();
  struct stat st {};
  if (::fstat(opened->fd(), &st) != 0)
    return internal_error(path + ": fstat: " + std::strerror(errno));
  return FileRowsKey{FileIdentity::of(st), path, format, dtype, width, first_row, rows, ""};
}

Result<FileRows> locate_keyed_rows(const FileRowsKey& key, const std::string& retry) {
  LIZARD_ASSIGN_OR_RETURN(FileRows located, locate_file_rows(key.path, key.format, key.dtype,
                                                             key.width, key.first_row, key.rows));
  if (located.identity != key.file)
    return invalid_argument(key.path + " changed while its rows were located; " + retry);
  return located;
}

}  // namespace lizard
