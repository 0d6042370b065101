#include "sandbox/sandbox.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "sandbox/landlock.h"
#include "sandbox/sanitized_build.h"
#include "sandbox/syscall_filter.h"

namespace lizard {
namespace {

// Every capability out of the bounding, ambient, effective, permitted and
// inheritable sets (a daemon run as root starts its helpers with all).
bool drop_capabilities() {
  (void)::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0) break;  // past the last one
    (void)::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  return ::syscall(SYS_capset, &header, data) == 0;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// The directory of `log_path=` in a sanitizer's options, if any.
void add_log_dir(const char* options, std::vector<std::string>* out) {
  if (options == nullptr) return;
  const std::string s(options);
  const size_t at = s.find("log_path=");
  if (at == std::string::npos) return;
  const size_t from = at + 9;
  const std::string path = s.substr(from, s.find(':', from) - from);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (!dir.empty()) out->push_back(dir);
}

}  // namespace

std::string SandboxReport::summary() const {
  if (disabled) return "off (LIZARD_SANDBOX=off)";
  std::string out = "applied: " + (applied.empty() ? std::string("nothing") : join(applied));
  if (!missing.empty()) out += "; missing: " + join(missing);
  return out;
}

unsigned long long hook_data_limit_bytes() {
  return kAddressSanitized ? 0 : 4ULL << 30;
}

bool sandbox_disabled() {
  const char* v = std::getenv("LIZARD_SANDBOX");
  return v != nullptr && std::strcmp(v, "off") == 0;
}

std::vector<std::string> system_read_paths() {
  return {"/usr",
          "/lib",
          "/lib64",
          "/lib32",
          "/bin",
          "/etc/ld.so.cache",
          "/etc/ld.so.conf",
          "/etc/ld.so.conf.d",
          "/etc/localtime",
          "/etc/nsswitch.conf",
          "/etc/alternatives",
          "/dev/null",
          "/dev/zero",
          "/dev/urandom",
          "/dev/random",
          "/sys/devices/system/cpu",
          "/proc/sys/vm/overcommit_memory"};
}

std::vector<std::string> sanitizer_log_dirs() {
  std::vector<std::string> out;
  add_log_dir(std::getenv("ASAN_OPTIONS"), &out);
  add_log_dir(std::getenv("UBSAN_OPTIONS"), &out);
  return out;
}

SandboxReport enter_sandbox(const SandboxSpec& spec) {
  SandboxReport r;
  if (sandbox_disabled()) {
    r.disabled = true;
    return r;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
    r.applied.push_back("no_new_privs");
  else
    r.missing.push_back(std::string("no_new_privs: ") + std::strerror(errno));
  if (drop_capabilities())
    r.applied.push_back("no capabilities");
  else
    r.missing.push_back(std::string("capabilities: ") + std::strerror(errno));
  // When the machine runs out of memory, user code's processes go first,
  // before any daemon.
  if (FILE* f = std::fopen("/proc/self/oom_score_adj", "w")) {
    const bool set = std::fputs("1000", f) >= 0;
    if (std::fclose(f) == 0 && set) r.applied.push_back("killed first when out of memory");
  }
  if (spec.data_limit_bytes > 0) {
    const rlimit data{spec.data_limit_bytes, spec.data_limit_bytes};
    if (::setrlimit(RLIMIT_DATA, &data) == 0)
      r.applied.push_back("data limit " + std::to_string(spec.data_limit_bytes >> 20) + " MiB");
  }
  SandboxSpec landlock = spec;
  // Its own /proc entry (where /proc/self leads), not other processes'.
  landlock.read_beneath.push_back("/proc/" + std::to_string(::getpid()));
  for (const std::string& dir : sanitizer_log_dirs()) landlock.write_beneath.push_back(dir);
  if (auto what = restrict_with_landlock(landlock); what.ok())
    r.applied.push_back(*what);
  else
    r.missing.push_back("landlock: " + what.status().message());
  if (Status st = filter_system_calls(spec.allow_processes); st.ok())
    r.applied.push_back(spec.allow_processes ? "seccomp" : "seccomp (no new processes)");
  else
    r.missing.push_back(st.message());
  return r;
}

SandboxReport probe_sandbox() {
  SandboxReport r;
  if (sandbox_disabled()) {
    r.disabled = true;
    return r;
  }
  r.applied.push_back("no_new_privs");
  r.applied.push_back("no capabilities");
  r.applied.push_back("killed first when out of memory");
  if (hook_data_limit_bytes() > 0)
    r.applied.push_back("hooks' memory " + std::to_string(hook_data_limit_bytes() >> 20) + " MiB");
  if (const int abi = landlock_abi(); abi > 0)
    r.applied.push_back("landlock ABI " + std::to_string(abi) +
                        (abi >= 6   ? " (files, TCP, signals)"
                         : abi >= 4 ? " (files, TCP)"
                                    : " (files)"));
  else
    r.missing.push_back("landlock: not enabled in this kernel");
  if (syscall_filter_built() && ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0)
    r.applied.push_back("seccomp");
  else
    r.missing.push_back(syscall_filter_built() ? "seccomp: not in this kernel"
                                               : "seccomp: not built in (libseccomp-dev)");
  return r;
}

}  // namespace lizard
