#include "server/state_dir_identity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lizard {

Result<StateDirIdentity> StateDirIdentity::take(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return internal_error("cannot open " + what + " " + path + ": " + std::strerror(err));
  }
  StateDirIdentity id;
  id.path_ = path;
  id.what_ = what;
  id.fd_ = std::shared_ptr<const int>(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
  id.dev_ = st.st_dev;
  id.ino_ = st.st_ino;
  return id;
}

Status StateDirIdentity::check() const {
  if (path_.empty()) return Status::Ok();
  struct stat st;
  const bool same = ::stat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
  if (same) return Status::Ok();
  return internal_error(what_ + " " + path_ +
                        " was removed or replaced while the server was running: nothing can be "
                        "stored until the server is restarted with its state directory in place");
}

}  // namespace lizard
