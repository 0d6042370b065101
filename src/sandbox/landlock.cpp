#include "sandbox/landlock.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

// Rights and fields newer than the system's header (the ABI is stable).
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace lizard {
namespace {

// struct landlock_ruleset_attr as of ABI 6; older kernels take a prefix.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};

constexpr uint64_t kReadRights =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
// The rights that apply to a file (not a directory) in a rule.
constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;

uint64_t write_rights(int abi) {
  uint64_t w = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
               LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
               LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
               LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
               LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) w |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) w |= LANDLOCK_ACCESS_FS_TRUNCATE;
  return w;
}

// Allows `rights` (those the ruleset handles) beneath `path`; a path that
// does not exist is skipped.
void allow_beneath(int ruleset, const std::string& path, uint64_t rights) {
  const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    landlock_path_beneath_attr rule{};
    rule.allowed_access = S_ISDIR(st.st_mode) ? rights : (rights & kFileRights);
    rule.parent_fd = fd;
    if (rule.allowed_access != 0)
      (void)::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
  }
  ::close(fd);
}

}  // namespace

int landlock_abi() {
  const long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0,
                           static_cast<uint32_t>(LANDLOCK_CREATE_RULESET_VERSION));
  return v > 0 ? static_cast<int>(v) : 0;
}

Result<std::string> restrict_with_landlock(const SandboxSpec& spec) {
  const int abi = landlock_abi();
  if (abi == 0) return unavailable("Landlock is not enabled in this kernel");
  RulesetAttr attr;
  const uint64_t writes = write_rights(abi);
  attr.handled_access_fs = writes | (spec.restrict_reads ? kReadRights : 0);
  size_t size = sizeof attr.handled_access_fs;
  std::string what = "landlock ABI " + std::to_string(abi) + " (writes";
  if (spec.restrict_reads) what += ", reads";
  if (abi >= 4) {
    attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    size = offsetof(RulesetAttr, scoped);
    what += ", TCP";
  }
  if (abi >= 6) {
    attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    size = sizeof attr;
    what += ", signals";
  }
  what += ")";
  const long ruleset = ::syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0)
    return internal_error(std::string("cannot create a Landlock ruleset: ") + std::strerror(errno));
  const int fd = static_cast<int>(ruleset);
  if (spec.restrict_reads)
    for (const std::string& p : spec.read_beneath) allow_beneath(fd, p, kReadRights);
  for (const std::string& p : spec.write_beneath)
    allow_beneath(fd, p, writes | (spec.restrict_reads ? kReadRights : 0));
  const long rc = ::syscall(SYS_landlock_restrict_self, fd, 0);
  const int err = errno;
  ::close(fd);
  if (rc != 0)
    return internal_error(std::string("cannot enter the Landlock ruleset: ") + std::strerror(err));
  return what;
}

}  // namespace lizard
