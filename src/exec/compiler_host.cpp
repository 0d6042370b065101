#include "exec/compiler_host.h"

#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/byte_codec.h"
#include "common/child_process.h"
#include "exec/host_compiler.h"
#include "sandbox/landlock.h"
#include "sandbox/sandbox.h"

namespace fs = std::filesystem;

namespace lizard {
namespace {

// A host that has not answered this long after the command's own deadline
// is taken for stuck.
constexpr int kAnswerGraceMs = 10000;

// The flags of HostCompiler's builds (its own, the CPU backend's in
// exec/cpu/kernel_source.cpp, host.cpp's in hooks/host_hooks.cpp).
constexpr const char* kAllowedFlags[] = {
    "--version",
    "-shared",
    "-fPIC",
    "-std=c++17",
    "-I.",
    "-x",
    "-o",
    "-pthread",
    "-march=native",
    "-fno-math-errno",
    "-fno-strict-aliasing",
    "-fvisibility=hidden",
    "-fvisibility=default",
    "-O0",
    "-O1",
    "-O2",
    "-O3",
    "-Os",
    "-g",
    "-w",
};

bool allowed_flag(const std::string& a) {
  for (const char* f : kAllowedFlags)
    if (a == f) return true;
  return false;
}

// A file of the build: relative, within the build directory, not an option.
bool build_file_name(const std::string& a) {
  if (a.empty() || a[0] == '-' || a[0] == '@' || a[0] == '/') return false;
  for (const auto& part : fs::path(a))
    if (part == "..") return false;
  return a.find('\0') == std::string::npos;
}

bool beneath(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p)
    if (p == path.end() || *p != *r) return false;
  return true;
}

std::string encode_request(const std::vector<std::string>& argv, const std::string& cwd,
                           int timeout_ms) {
  ByteWriter w;
  w.u64(argv.size());
  for (const std::string& a : argv) w.bytes(a);
  w.bytes(cwd);
  w.i32(timeout_ms);
  return std::move(w.out());
}

// A request of no arguments narrows the host: `dir` (beneath its root) is
// its root from then on, and `shared` (a directory of precompiled headers)
// stays readable.
std::string encode_narrowing(const std::string& dir, const std::string& shared) {
  ByteWriter w;
  w.u64(0);
  w.bytes(dir);
  w.bytes(shared);
  return std::move(w.out());
}

std::vector<std::string>& compile_reads();

// The host's own layer once narrowed: it and its compiles read the system,
// the compiler, `dir` and `shared`, and write beneath `dir` and its TMPDIR.
Status narrow_host(std::string* root, const std::string& dir, const std::string& shared) {
  std::error_code e1, e2;
  const fs::path to = fs::weakly_canonical(dir, e1);
  const fs::path top = fs::canonical(*root, e2);
  if (e1 || e2 || !beneath(to, top))
    return permission_denied("a compiler host narrows only to a directory beneath " + *root);
  fs::create_directories(to / "tmp", e1);
  ::setenv("TMPDIR", (to / "tmp").c_str(), 1);
  *root = to.string();
  if (sandbox_disabled()) return Status::Ok();
  SandboxSpec spec;
  spec.restrict_reads = true;
  spec.read_beneath = compile_reads();
  spec.read_beneath.push_back(to.string());
  if (!shared.empty()) spec.read_beneath.push_back(shared);
  compile_reads() = spec.read_beneath;
  spec.write_beneath = {to.string(), "/dev/null"};
  for (const std::string& d : sanitizer_log_dirs()) spec.write_beneath.push_back(d);
  auto applied = restrict_with_landlock(spec);
  if (!applied.ok() && applied.status().code() != Code::kUnavailable) return applied.status();
  return Status::Ok();
}

std::string encode_answer(const Result<CommandOutput>& r) {
  ByteWriter w;
  w.u8(r.ok() ? 1 : 0);
  if (!r.ok()) {
    w.u8(static_cast<uint8_t>(r.status().code()));
    w.bytes(r.status().message());
    return std::move(w.out());
  }
  w.i32(r->exit_code);
  w.u8(r->timed_out ? 1 : 0);
  w.bytes(r->output);
  return std::move(w.out());
}

Result<CommandOutput> decode_answer(std::string_view frame) {
  ByteReader r(frame);
  const bool ok = r.u8() != 0;
  if (!ok) {
    const auto code = static_cast<Code>(r.u8());
    std::string message = r.str();
    if (!r.ok()) return internal_error("a compiler host's answer is cut short");
    return Status(code, std::move(message));
  }
  CommandOutput out;
  out.exit_code = r.i32();
  out.timed_out = r.u8() != 0;
  out.output = r.str();
  if (!r.ok()) return internal_error("a compiler host's answer is cut short");
  return out;
}

// What every compile may read besides its build: the system's files and the
// compiler's installation (set once, before the first command).
std::vector<std::string>& compile_reads() {
  static std::vector<std::string> reads;
  return reads;
}

// In each compile's own process, before the compiler starts: a Landlock
// layer of its own, under which it reads only the system, the compiler and
// its build directory (with the precompiled headers beside it, ../pch, or
// beside its owner's directory, ../../pch), and writes only there and in its
// TMPDIR.  So a source cannot embed another program's build or anything
// else beneath the root.
void confine_to_build(const std::string& build) {
  if (sandbox_disabled()) return;
  SandboxSpec spec;
  spec.restrict_reads = true;
  spec.read_beneath = compile_reads();
  spec.write_beneath = {"/dev/null"};
  if (const char* tmp = std::getenv("TMPDIR")) spec.write_beneath.push_back(tmp);
  if (!build.empty()) {
    spec.write_beneath.push_back(build);
    const fs::path parent = fs::path(build).parent_path();
    spec.read_beneath.push_back((parent / "pch").string());
    spec.read_beneath.push_back((parent.parent_path() / "pch").string());
  }
  (void)restrict_with_landlock(spec);
}

// Before the first command: the compiler reads only the system's files,
// its own installation and what lies beneath `root`, writes only beneath
// `root` (its temporary files too), and reaches no other process and no
// TCP port.  It may start processes: the driver runs the compiler proper,
// the assembler and the linker.
void enter_compiler_sandbox(const std::string& root, const std::string& compiler) {
  std::error_code ec;
  const std::string scratch = root + "/tmp";
  fs::create_directories(scratch, ec);
  ::setenv("TMPDIR", scratch.c_str(), 1);
  SandboxSpec spec;
  spec.allow_processes = true;
  spec.restrict_reads = true;
  spec.read_beneath = system_read_paths();
  const std::string path = HostCompiler::compiler_path(compiler);
  if (!path.empty())  // its installation: prefix/bin/c++ -> prefix
    spec.read_beneath.push_back(fs::path(path).parent_path().parent_path().string());
  compile_reads() = spec.read_beneath;
  spec.read_beneath.push_back(root);
  spec.write_beneath = {root, "/dev/null"};
  (void)enter_sandbox(spec);  // the daemon says at its start what this machine lacks
}

int serve(std::string root) {
  auto channel = ChildProcess::parent_channel();
  if (!channel.ok()) {
    std::fprintf(stderr, "lizard %s: %s (it is started by the lizard daemons)\n",
                 kCompilerHostCommand, channel.status().message().c_str());
    return 2;
  }
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, SIG_DFL);
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  const std::string compiler = HostCompiler::default_compiler();
  enter_compiler_sandbox(root, compiler);
  std::string frame;
  for (;;) {
    if (!ChildProcess::receive_request(&channel.value(), &frame).ok()) return 0;
    ByteReader r(frame);
    std::vector<std::string> argv;
    const uint64_t count = r.u64();
    if (count == 0) {
      const std::string dir = r.str();
      const std::string shared = r.str();
      Status st = r.ok() ? narrow_host(&root, dir, shared)
                         : internal_error("a compiler host's request is cut short");
      if (!channel
               ->send(encode_answer(st.ok() ? Result<CommandOutput>(CommandOutput{})
                                            : Result<CommandOutput>(st)))
               .ok())
        return 0;
      continue;
    }
    for (uint64_t i = 0; i < count && r.ok(); ++i) argv.push_back(r.str());
    std::string cwd = r.str();  // relative to the daemon's directory, which is this one's
    if (!cwd.empty()) cwd = fs::absolute(cwd).lexically_normal().string();
    const int timeout_ms = r.i32();
    Result<CommandOutput> out = internal_error("a compiler host's request is cut short");
    if (r.ok()) {
      Status allowed = check_compiler_command(argv, cwd, compiler, root);
      out = allowed.ok() ? run_command(argv, cwd, timeout_ms, &confine_to_build)
                         : Result<CommandOutput>(allowed);
    }
    if (!channel->send(encode_answer(out)).ok()) return 0;
  }
}

}  // namespace

struct CompilerHosts::Host {
  std::unique_ptr<ChildProcess> child;  // null: gone, started again when taken
  bool busy = false;
  std::string frame;
};

CompilerHosts::CompilerHosts(CompilerHostOptions options) : options_(std::move(options)) {}

CompilerHosts::~CompilerHosts() = default;

Result<std::unique_ptr<CompilerHosts>> CompilerHosts::start(CompilerHostOptions options) {
  if (options.root.empty()) return invalid_argument("compiler hosts need a root directory");
  if (options.processes < 1) options.processes = 1;
  if (options.max_processes < options.processes) options.max_processes = options.processes;
  std::error_code ec;
  fs::create_directories(options.root, ec);
  // The hosts' compiles run in build directories beneath it, and their
  // TMPDIR is beneath it: a relative root would name other places from there.
  options.root = fs::weakly_canonical(fs::absolute(options.root), ec).string();
  if (ec) return invalid_argument("compiler hosts' root: " + ec.message());
  std::unique_ptr<CompilerHosts> hosts(new CompilerHosts(std::move(options)));
  for (int i = 0; i < hosts->options_.processes; ++i) {
    auto child = hosts->spawn();
    if (!child.ok()) return child.status();
    hosts->hosts_.push_back(std::make_unique<Host>());
    hosts->hosts_.back()->child = std::move(child).value();
  }
  return hosts;
}

Result<std::unique_ptr<ChildProcess>> CompilerHosts::spawn() const {
  auto child = ChildProcess::spawn({kCompilerHostCommand, options_.root}, options_.program);
  if (!child.ok()) return unavailable("cannot start a compiler host: " + child.status().message());
  return child;
}

Result<CompilerHosts::Host*> CompilerHosts::take() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // A free host that runs first: one that died may not start again (an
    // executor process's sandbox starts none).
    Host* free = nullptr;
    for (auto& h : hosts_)
      if (!h->busy && (!free || (h->child && !free->child))) free = h.get();
    if (free) {
      free->busy = true;
      return free;
    }
    if (hosts_.size() < static_cast<size_t>(options_.max_processes)) {
      hosts_.push_back(std::make_unique<Host>());
      hosts_.back()->busy = true;
      return hosts_.back().get();  // its process starts in run_on
    }
    freed_.wait(lock);
  }
}

void CompilerHosts::give_back(Host* host) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    host->busy = false;
  }
  freed_.notify_one();
}

Result<CommandOutput> CompilerHosts::run(const std::vector<std::string>& argv,
                                         const std::string& cwd, int timeout_ms) {
  LIZARD_ASSIGN_OR_RETURN(Host * host, take());
  Result<CommandOutput> out = run_on(host, argv, cwd, timeout_ms);
  give_back(host);
  return out;
}

Result<CommandOutput> CompilerHosts::run_on(Host* host, const std::vector<std::string>& argv,
                                            const std::string& cwd, int timeout_ms) {
  if (!host->child) {
    LIZARD_ASSIGN_OR_RETURN(host->child, spawn());
  }
  Status st = host->child->channel().send(encode_request(argv, cwd, timeout_ms));
  if (st.ok())
    st = host->child->receive_into(&host->frame, timeout_ms > 0 ? timeout_ms + kAnswerGraceMs : -1);
  if (!st.ok()) {
    const std::string how =
        host->child->running() ? "did not answer in time" : host->child->exit_description();
    host->child->kill();
    host->child.reset();
    return unavailable("the compiler host " + how);
  }
  return decode_answer(host->frame);
}

Status CompilerHosts::narrow(const std::string& dir, const std::string& shared) {
  std::vector<Host*> all;
  {
    std::unique_lock<std::mutex> lock(mu_);
    freed_.wait(lock, [&] {
      for (auto& h : hosts_)
        if (h->busy) return false;
      return true;
    });
    for (auto& h : hosts_) {
      h->busy = true;
      all.push_back(h.get());
    }
    options_.root = dir;  // a host started later starts there
  }
  Status out;
  for (Host* h : all) {
    if (!h->child) continue;
    Status st = h->child->channel().send(encode_narrowing(dir, shared));
    if (st.ok()) st = h->child->receive_into(&h->frame, kAnswerGraceMs);
    if (st.ok()) st = decode_answer(h->frame).status();
    if (!st.ok()) {  // a host that is not narrowed builds nothing more
      h->child->kill();
      h->child.reset();
      out = st;
    }
  }
  for (Host* h : all) give_back(h);
  return out;
}

std::function<Result<CommandOutput>(const std::vector<std::string>&, const std::string&, int)>
CompilerHosts::runner() {
  return [this](const std::vector<std::string>& argv, const std::string& cwd, int timeout_ms) {
    return run(argv, cwd, timeout_ms);
  };
}

Status check_compiler_command(const std::vector<std::string>& argv, const std::string& cwd,
                              const std::string& compiler, const std::string& root) {
  if (argv.empty() || argv[0] != compiler)
    return permission_denied("a compiler host runs only " + compiler);
  if (argv.size() == 2 && argv[1] == "--version") return Status::Ok();
  for (size_t i = 1; i < argv.size(); ++i)
    if (!allowed_flag(argv[i]) && !build_file_name(argv[i]))
      return permission_denied("a compiler host does not pass \"" + argv[i] + "\" to " + compiler);
  std::error_code dir_error, root_error;
  const fs::path dir = fs::canonical(cwd, dir_error);
  const fs::path top = fs::canonical(root, root_error);
  if (cwd.empty() || dir_error || root_error || !beneath(dir, top))
    return permission_denied("a compiler host builds only beneath " + root);
  return Status::Ok();
}

std::optional<int> compiler_host_command(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], kCompilerHostCommand) != 0) return std::nullopt;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s %s ROOT\n", argv[0], kCompilerHostCommand);
    return 2;
  }
  return serve(argv[2]);
}

}  // namespace lizard
