#include "exec/process/executor_host.h"

#include <csignal>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "common/child_process.h"
#include "exec/compile_cache.h"
#include "exec/compiler_host.h"
#include "exec/host_compiler.h"
#include "exec/process/executor_protocol.h"
#include "exec/process/outputs_memory.h"
#include "sandbox/landlock.h"
#include "sandbox/sandbox.h"
#include "sandbox/sanitized_build.h"

namespace lizard {
namespace {

uint64_t total_of(const std::vector<uint64_t>& sizes) {
  uint64_t n = 0;
  for (uint64_t s : sizes) n += s;
  return n;
}

// The executor and what it keeps between calls: the programs it was sent,
// and the run in progress with its state and aggregate buffers.
class Host {
 public:
  Host(std::unique_ptr<Executor> executor, Status unusable, BackendOptions options)
      : executor_(std::move(executor)),
        unusable_(std::move(unusable)),
        options_(std::move(options)) {}

  // Answers one request; false when the device is lost and the host must end.
  bool serve(std::string_view frame, FrameChannel* channel);

 private:
  Status build(ByteReader* r);
  Status begin_run(ByteReader* r, ByteWriter* out, FrameChannel* channel);
  Status iterate(ByteReader* r, ByteWriter* out);
  Status end_run(ByteReader* r, ByteWriter* out, OutputFieldBytes* fields);
  Result<std::shared_ptr<const ProgramImage>> program(ByteReader* r, bool sent);
  Status take_owner(ByteReader* r);

  std::unique_ptr<Executor> executor_;
  Status unusable_;
  BackendOptions options_;
  std::string owner_;  // the one it serves, once told
  std::map<std::string, std::shared_ptr<const ProgramImage>> programs_;  // by hash
  std::shared_ptr<const ProgramImage> run_program_;
  ParamValues run_params_;
  SectionBuffer state_, aggregate_;
  // Each reply's pieces, reused: an iteration allocates nothing here.
  ByteWriter head_, body_;
  std::vector<std::string_view> parts_;
  OutputsMemory outputs_;  // end_run's, when they go in a memory file
};

Result<std::shared_ptr<const ProgramImage>> Host::program(ByteReader* r, bool sent) {
  if (!sent) {
    const std::string hash = r->str();
    auto it = programs_.find(hash);
    if (it == programs_.end()) return not_found("the executor process has no program " + hash);
    return it->second;
  }
  LIZARD_ASSIGN_OR_RETURN(ProgramImage img, read_program(r));
  auto p = std::make_shared<const ProgramImage>(std::move(img));
  programs_[p->hash] = p;
  return p;
}

Status serve_owner(const BackendOptions& options, const std::string& owner);

Status Host::take_owner(ByteReader* r) {
  const std::string owner = r->str();
  LIZARD_RETURN_IF_ERROR(r->status("serve_owner"));
  if (owner == owner_) return Status::Ok();
  if (!owner_.empty() || !programs_.empty())
    return Status(Code::kConflict,
                  "the executor process serves " +
                      (owner_.empty() ? std::string("programs already") : "owner " + owner_));
  LIZARD_RETURN_IF_ERROR(serve_owner(options_, owner));
  owner_ = owner;
  return Status::Ok();
}

Status Host::build(ByteReader* r) {
  LIZARD_ASSIGN_OR_RETURN(auto p, program(r, true));
  return executor_->build(*p);
}

// The descriptors that came with a request, as the files of its FileRows in
// the order the worker opened them.
Status attach_descriptors(std::vector<OwnedFd>* fds, size_t* next, FileRows* rows) {
  if (*next >= fds->size())
    return invalid_argument("the worker sent no open file for " + rows->path);
  rows->descriptor = std::make_shared<const OwnedFd>(std::move((*fds)[(*next)++]));
  return Status::Ok();
}

Status Host::begin_run(ByteReader* r, ByteWriter* out, FrameChannel* channel) {
  std::vector<OwnedFd> files = channel->take_descriptors();  // before the field frames
  size_t next_file = 0;
  const bool sent = r->u8() != 0;
  auto found = program(r, sent);  // checked once the field frames are read
  ParamValues params = read_params(r);
  PartitionData d;
  auto read_heads = read_partition_head(r, &d);
  LIZARD_RETURN_IF_ERROR(r->status("begin_run"));
  LIZARD_ASSIGN_OR_RETURN(std::vector<FieldRowsHead> heads, std::move(read_heads));
  // Each field's rows, unless named by key or read from a file by the
  // executor, follow as a frame of their own, read into place.
  d.fields.resize(heads.size());
  d.shared.resize(heads.size());
  bool missing = false;
  Status opened;  // checked once every field frame is read
  const std::vector<std::string> kept = executor_->kept_rows();
  for (size_t k = 0; k < heads.size(); ++k) {
    d.shared[k].key = heads[k].key;
    if (heads[k].how == FieldRows::kKept) {
      d.shared[k].size = heads[k].size;
      missing = missing || std::find(kept.begin(), kept.end(), heads[k].key) == kept.end();
    } else if (heads[k].how == FieldRows::kFile) {
      if (d.file_rows.empty()) d.file_rows.resize(heads.size());
      d.file_rows[k] = std::move(heads[k].file);
      if (opened.ok()) opened = attach_descriptors(&files, &next_file, &d.file_rows[k]);
    } else if (Status st = channel->receive_into(&d.fields[k], -1); !st.ok()) {
      return st;
    }
  }
  LIZARD_RETURN_IF_ERROR(opened);
  // Rows this process no longer keeps: the worker sends them again.
  if (missing) {
    write_begin_run_reply(out, CompileStats{}, true, kept);
    return not_found("the executor process no longer keeps rows the run names");
  }
  LIZARD_ASSIGN_OR_RETURN(auto p, std::move(found));
  const Manifest& m = p->manifest;
  LIZARD_ASSIGN_OR_RETURN(state_, make_section(m.state, m, params));
  LIZARD_ASSIGN_OR_RETURN(aggregate_, make_section(m.aggregate, m, params));
  run_program_ = p;
  run_params_ = params;
  Status st = executor_->begin_run(*p, params, std::move(d));
  write_begin_run_reply(out, executor_->run_compile_stats(), false, executor_->kept_rows());
  return st;
}

Status Host::iterate(ByteReader* r, ByteWriter* out) {
  const int64_t iteration = r->i64();
  const int64_t first = r->i64();
  const int64_t count = r->i64();
  std::string_view state = r->rest();
  LIZARD_RETURN_IF_ERROR(r->status("iterate"));
  if (!run_program_) return not_found("no run on this executor");
  if (state.size() != state_.bytes.size())
    return invalid_argument("state of " + std::to_string(state.size()) + " bytes; expected " +
                            std::to_string(state_.bytes.size()));
  if (!state.empty()) std::memcpy(state_.bytes.data(), state.data(), state.size());
  IterationStats stats;
  Status st = count < 0
                  ? executor_->iterate(state_, iteration, &aggregate_, &stats)
                  : executor_->iterate_rows(state_, iteration, &aggregate_, &stats, first, count);
  out->f64(stats.kernel_ms);
  out->f64(stats.total_ms);
  out->u8(stats.switched_build ? 1 : 0);
  out->bytes(std::string_view(reinterpret_cast<const char*>(aggregate_.bytes.data()),
                              st.ok() ? aggregate_.bytes.size() : 0));
  return st;
}

// Writes the fields' bytes, one after another.
std::function<Status(char*)> copy_of(const std::vector<std::string_view>& fields) {
  return [&fields](char* to) {
    for (std::string_view f : fields) {
      if (!f.empty()) std::memcpy(to, f.data(), f.size());
      to += f.size();
    }
    return Status::Ok();
  };
}

// Ends the run into memory, the fields of `sizes` one after another, written
// there by the executor itself (a GPU's download, with no copy in between).
std::function<Status(char*)> end_run_into(Executor* e, const std::vector<uint64_t>& sizes) {
  return [e, &sizes](char* to) {
    std::vector<char*> places;
    for (uint64_t n : sizes) {
      places.push_back(n ? to : nullptr);
      to += n;
    }
    return e->end_run_into(places);
  };
}

// Large outputs go in a memory file the worker maps; small ones follow the
// reply as parts.
Status Host::end_run(ByteReader* r, ByteWriter* out, OutputFieldBytes* fields) {
  const bool want = r->u8() != 0;
  outputs_.given_back(read_loans(r));
  LIZARD_RETURN_IF_ERROR(r->status("end_run"));
  run_program_.reset();
  outputs_.sent();
  std::vector<uint64_t> sizes = want ? executor_->output_field_sizes() : std::vector<uint64_t>{};
  Status st;
  bool ended = false;
  if (total_of(sizes) >= kSealedOutputBytes)
    st = outputs_.put(total_of(sizes), end_run_into(executor_.get(), sizes), &ended);
  if (!ended) {  // an executor that gives its outputs back, or no memory file
    auto got = executor_->end_run_in_place(want);
    st = got.status();
    if (got.ok()) *fields = std::move(got).value();
    sizes.clear();
    for (std::string_view f : fields->fields) sizes.push_back(f.size());
    bool copied = false;
    if (total_of(sizes) >= kSealedOutputBytes &&
        !outputs_.put(total_of(sizes), copy_of(fields->fields), &copied).ok())
      outputs_.sent();  // as parts
  }
  if (!st.ok()) outputs_.sent();
  out->u64(sizes.size());
  for (uint64_t n : sizes) out->length(n);
  outputs_.describe(out);
  return st;
}

bool Host::serve(std::string_view frame, FrameChannel* channel) {
  ByteReader r(frame);
  const auto op = static_cast<ExecutorOp>(r.u8());
  ByteWriter& body = body_;
  body.out().clear();
  OutputFieldBytes fields;  // end_run's, sent as parts or in outputs_
  Status st = unusable_;
  if (st.ok()) {
    switch (op) {
      case ExecutorOp::kInfo:
        body.bytes(executor_->info().to_json().dump());
        break;
      case ExecutorOp::kBuild:
        st = build(&r);
        break;
      case ExecutorOp::kBeginRun:
        st = begin_run(&r, &body, channel);
        break;
      case ExecutorOp::kIterate:
        st = iterate(&r, &body);
        break;
      case ExecutorOp::kEndRun:
        st = end_run(&r, &body, &fields);
        break;
      case ExecutorOp::kRefreshFreeMemory:
        executor_->refresh_free_memory();
        body.u64(executor_->info().free_memory);
        break;
      case ExecutorOp::kKeepFileRows: {
        const std::string key = r.str();
        FileRows where = read_file_rows_head(&r);
        st = r.status("keep_file_rows");
        std::vector<OwnedFd> file = channel->take_descriptors();
        size_t next = 0;
        if (st.ok()) st = attach_descriptors(&file, &next, &where);
        if (st.ok()) st = executor_->keep_file_rows(key, where);
        write_keys(&body, executor_->kept_rows());
        break;
      }
      case ExecutorOp::kForgetKeptRows: {
        const std::vector<std::string> keys = read_keys(&r);
        st = r.status("forget_kept_rows");
        if (st.ok()) executor_->forget_kept_rows({keys.begin(), keys.end()});
        write_keys(&body, executor_->kept_rows());
        break;
      }
      case ExecutorOp::kServeOwner:
        st = take_owner(&r);
        break;
      case ExecutorOp::kRefreshLoad:
        executor_->refresh_load();
        body.f64(executor_->info().utilization);
        body.f64(executor_->info().launch_delay_us);
        break;
      default:
        st = invalid_argument("unknown executor call " + std::to_string(static_cast<int>(op)));
    }
  }
  // What the call printed reaches the worker before its answer does.
  std::fflush(stdout);
  std::fflush(stderr);
  const bool lost = executor_ && executor_->lost();
  head_.out().clear();
  write_reply_head(&head_, st, lost);
  parts_.assign({head_.out(), body.out()});
  if (outputs_.fd() >= 0) {
    (void)channel->send_with_descriptor(parts_.data(), parts_.size(), outputs_.fd());
    outputs_.sent();
  } else {
    parts_.insert(parts_.end(), fields.fields.begin(), fields.fields.end());
    (void)channel->send_parts(parts_.data(), parts_.size());
  }
  // The ended run's memory goes once the worker has its outputs.
  if (op == ExecutorOp::kEndRun && executor_) executor_->free_ended_run();
  return !lost;
}

int probe(FrameChannel* channel, const BackendOptions& options) {
  auto frame = channel->receive(-1);
  if (!frame.ok()) return 0;
  std::string note;
  auto made = make_executors(options, &note);
  nlohmann::json executors = nlohmann::json::array();
  if (made.ok())
    for (const auto& e : made.value()) executors.push_back(e->info().to_json());
  ByteWriter w;
  write_reply_head(&w, made.status(), false);
  w.bytes(nlohmann::json{{"note", note}, {"executors", executors}}.dump());
  (void)channel->send(w.out());
  return 0;
}

// The compiler hosts of a CPU executor's process, started before its
// sandbox; they live as long as the process.
std::unique_ptr<CompilerHosts>& compiler_hosts() {
  static std::unique_ptr<CompilerHosts> hosts;
  return hosts;
}

std::string cache_root_of(const BackendOptions& options) {
  return options.cache_dir.empty() ? default_cache_root() : options.cache_dir;
}

// Once its device is open, before any kernel loads: the executor writes
// only beneath its caches and the device nodes, starts no process (a CPU
// executor's host compiler runs in compiler hosts started here first,
// exec/compiler_host.h), reaches no other process (no ptrace, pidfd_getfd,
// signals) and no TCP port (sandbox/sandbox.h).  Reads stay open: a run's
// files may be anywhere.  The compiler hosts live as long as the process.
void enter_executor_sandbox(const BackendOptions& options, const Executor* executor) {
  if (executor && executor->info().kind == "cpu") {
    CompilerHostOptions ho;
    ho.root = cache_root_of(options);
    ho.processes = 2;  // an ahead build and the pch beside a run's build
    auto hosts = CompilerHosts::start(ho);
    if (hosts.ok()) {
      compiler_hosts() = std::move(hosts).value();
      HostCompiler::run_compiler_through(compiler_hosts()->runner());
    } else {
      std::fprintf(stderr, "lizard executor-host: %s\n", hosts.status().message().c_str());
    }
  }
  SandboxSpec spec;
  spec.write_beneath = {"/dev"};
  if (executor && executor->info().kind == "cpu")
    spec.data_limit_bytes = options.cpu_memory_mb > 0
                                ? static_cast<unsigned long long>(options.cpu_memory_mb) << 20
                                : executor->info().total_memory;
  if (kAddressSanitized) spec.data_limit_bytes = 0;  // its shadow memory would count
  if (!options.cache_dir.empty()) {
    const std::string scratch = options.cache_dir + "/tmp";
    std::error_code ec;
    std::filesystem::create_directories(scratch, ec);
    ::setenv("TMPDIR", scratch.c_str(), 1);
    spec.write_beneath.push_back(options.cache_dir);
  }
  (void)enter_sandbox(spec);  // the worker says at its start what this machine lacks
}

// What an executor process of one owner reads besides its own cache
// entries: the system, the libraries it may still load (LD_LIBRARY_PATH, the
// CUDA toolkit's), the driver's files and device nodes, and the facts about
// the machine it reports.
std::vector<std::string> executor_reads(const BackendOptions& options) {
  std::vector<std::string> reads = system_read_paths();
  if (const char* path = std::getenv("LD_LIBRARY_PATH")) {
    std::string dirs(path);
    for (size_t at = 0; at <= dirs.size();) {
      const size_t end = std::min(dirs.find(':', at), dirs.size());
      if (end > at) reads.push_back(dirs.substr(at, end - at));
      at = end + 1;
    }
  }
  if (!options.cuda_path.empty()) reads.push_back(options.cuda_path);
  for (const char* p : {"/sys", "/proc/driver/nvidia", "/proc/meminfo", "/proc/cpuinfo",
                        "/proc/stat", "/proc/devices", "/dev/shm"})
    reads.push_back(p);
  reads.push_back("/proc/" + std::to_string(::getpid()));
  std::error_code ec;
  for (const auto& de : std::filesystem::directory_iterator("/dev", ec))
    if (de.path().filename().string().rfind("nvidia", 0) == 0) reads.push_back(de.path().string());
  return reads;
}

bool owner_name(const std::string& owner) {
  return !owner.empty() && owner.size() <= 128 &&
         std::all_of(owner.begin(), owner.end(), [](char c) { return std::isalnum(c) != 0; });
}

// Once the process serves one owner, before that owner's code loads (a
// program's builds lie among its own entries of the compile cache,
// CompileCache::owned_by): its compiler hosts build only there, and a
// Landlock layer of its own narrows it to reading executor_reads(), those
// entries and the shared precompiled headers, and to writing those entries,
// a scratch directory among them (its TMPDIR) and the device nodes.  A run's
// files come as descriptors the worker opened (executor_protocol.h), so no
// path of theirs need be readable.
Status serve_owner(const BackendOptions& options, const std::string& owner) {
  if (!owner_name(owner)) return invalid_argument("an owner is letters and digits: " + owner);
  namespace fs = std::filesystem;
  const fs::path kernels = fs::path(cache_root_of(options)) / "kernels";
  const fs::path mine = kernels / owner;
  const fs::path scratch = mine / "tmp";
  std::error_code ec;
  fs::create_directories(scratch, ec);
  if (ec) return internal_error("cannot create " + scratch.string() + ": " + ec.message());
  if (compiler_hosts())
    LIZARD_RETURN_IF_ERROR(compiler_hosts()->narrow(mine.string(), (kernels / "pch").string()));
  ::setenv("TMPDIR", scratch.c_str(), 1);
  if (sandbox_disabled()) return Status::Ok();
  SandboxSpec spec;
  spec.restrict_reads = true;
  spec.read_beneath = executor_reads(options);
  spec.read_beneath.push_back(mine.string());
  spec.read_beneath.push_back((kernels / "pch").string());
  spec.write_beneath = {mine.string(), "/dev/shm", "/dev/null"};
  for (const std::string& p : executor_reads(options))
    if (p.rfind("/dev/nvidia", 0) == 0) spec.write_beneath.push_back(p);
  for (const std::string& d : sanitizer_log_dirs()) spec.write_beneath.push_back(d);
  auto applied = restrict_with_landlock(spec);
  if (!applied.ok() && applied.status().code() != Code::kUnavailable) return applied.status();
  return Status::Ok();
}

}  // namespace

int run_executor_host(const BackendOptions& options, bool probe_only) {
  // A kernel that crashes ends this process by its signal (the worker reports
  // it), also under a sanitizer runtime that would otherwise catch it.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
  auto channel = ChildProcess::parent_channel();
  if (!channel.ok()) {
    std::fprintf(stderr, "lizard executor-host is started by lizard client: %s\n",
                 channel.status().message().c_str());
    return 2;
  }
  if (probe_only) return probe(&channel.value(), options);
  std::string note;
  BackendOptions serving = options;
  serving.warm_up_compiler = true;
  auto made = make_executors(serving, &note);
  Status unusable = made.status();
  std::unique_ptr<Executor> executor;
  if (made.ok() && made->size() != 1)
    unusable = invalid_argument("the executor options select " + std::to_string(made->size()) +
                                " executors; an executor process serves one");
  else if (made.ok())
    executor = std::move(made->front());
  enter_executor_sandbox(options, executor.get());
  Host host(std::move(executor), unusable, serving);
  std::string frame;  // every request's, its capacity reused
  for (;;) {
    if (!ChildProcess::receive_request(&channel.value(), &frame).ok())
      return 0;  // the worker closed it, or is gone
    // A lost device, or a kernel library stuck in its static initialisers
    // (holding the dynamic loader, which a tear-down would wait for): ends
    // at once, tearing nothing down.
    if (!host.serve(frame, &channel.value())) std::_Exit(3);
  }
}

}  // namespace lizard
