#include "hooks/hook_host.h"

#include <sys/resource.h>

#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/child_process.h"
#include "common/shared_library.h"
#include "hooks/hook_protocol.h"
#include "sandbox/sandbox.h"

namespace lizard {
namespace {

using InitFn = void (*)(const void* params, void* state);
using AggregateFn = void (*)(const void* params, void* running, const void* partial);
using UpdateFn = int (*)(const void* params, const void* result, void* state, int64_t iteration);

// Bytes aligned for any field type (section slots start 16-byte aligned).
class AlignedBytes {
 public:
  // Both keep the memory held so far: a section of the same size as the
  // last allocates nothing.
  void assign(std::string_view b) {
    zero(b.size());
    if (!b.empty()) std::memcpy(data(), b.data(), b.size());
  }
  void zero(size_t n) {
    words_.assign((n + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t) + 1,
                  std::max_align_t{});
    size_ = n;
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words_.data()); }
  size_t size() const { return size_; }
  std::string_view view() { return {reinterpret_cast<const char*>(data()), size_}; }

 private:
  std::vector<std::max_align_t> words_;
  size_t size_ = 0;
};

// A hook's C struct laid over a section buffer, per its map, in `bytes`
// (the caller's, reused from call to call).
class MappedStruct {
 public:
  MappedStruct(const SectionMap& map, AlignedBytes* section, AlignedBytes* bytes)
      : map_(map), section_(section), bytes_(*bytes) {
    bytes_.zero(map.struct_size);
    for (const auto& mem : map_.members) {
      uint8_t* dst = bytes_.data() + mem.struct_offset;
      if (mem.pointer) {
        const uint64_t addr = reinterpret_cast<uint64_t>(section_->data() + mem.slot_offset);
        std::memcpy(dst, &addr, sizeof addr);
      } else {
        std::memcpy(dst, section_->data() + mem.slot_offset, mem.size);
      }
    }
  }
  void* get() { return bytes_.data(); }
  // Copies the value members the hook may have changed back into the section.
  void write_back() {
    for (const auto& mem : map_.members)
      if (!mem.pointer)
        std::memcpy(section_->data() + mem.slot_offset, bytes_.data() + mem.struct_offset,
                    mem.size);
  }

 private:
  const SectionMap& map_;
  AlignedBytes* section_;
  AlignedBytes& bytes_;
};

// What a hook printed reaches the daemon (hook_process.h) before its answer.
void flush_output() {
  std::fflush(stdout);
  std::fflush(stderr);
}

class HookServer {
 public:
  // `context`: the library's lizard_hook_context (null when it has none).
  HookServer(FrameChannel* channel, InitFn init, AggregateFn aggregate, UpdateFn update,
             void* context)
      : channel_(channel), init_(init), aggregate_(aggregate), update_(update), context_(context) {}

  Status handle(std::string_view frame) {
    if (is_setup_frame(frame)) {
      auto setup = decode_setup(frame);
      if (!setup.ok()) return fail(setup.status().message());
      setup_ = std::move(setup).value();
      params_.assign(setup_.params);
      have_setup_ = true;
      channel_->expect_frame_soon();  // the run's first call follows
      return channel_->send(encode_result_head(0));
    }
    auto call = decode_call(frame);
    if (!call.ok()) return fail(call.status().message());
    if (!have_setup_) return fail("a hook call before the setup");
    if (context_) write_hook_context(context_, setup_.values, call->iteration);
    switch (call->op) {
      case HookOp::kInit:
        return init(*call);
      case HookOp::kAggregate:
        return aggregate(*call);
      case HookOp::kUpdate:
        return update(*call);
    }
    return fail("an unknown hook call");
  }

 private:
  Status fail(const std::string& message) {
    flush_output();
    return channel_->send(encode_failed(message));
  }

  // Copies `bytes` into `into` after checking its size against the map.
  bool load(std::string_view bytes, const SectionMap& map, AlignedBytes* into) {
    if (bytes.size() != map.section_size) return false;
    into->assign(bytes);
    return true;
  }

  Status reply(int32_t value, AlignedBytes* section) {
    flush_output();
    encode_result_head(value, &head_);
    const std::string_view parts[] = {head_, section->view()};
    return channel_->send_parts(parts, 2);
  }

  Status init(const HookCall& c) {
    if (!init_) return fail("the library defines no init_global_state");
    if (!load(c.first, setup_.state, &state_)) return fail("a state of the wrong size");
    MappedStruct st(setup_.state, &state_, &first_struct_);
    init_(params_.data(), st.get());
    st.write_back();
    return reply(1, &state_);
  }

  Status aggregate(const HookCall& c) {
    if (!aggregate_) return fail("the library defines no aggregate");
    if (!load(c.first, setup_.aggregate, &running_) || !load(c.second, setup_.aggregate, &partial_))
      return fail("an aggregate of the wrong size");
    MappedStruct running(setup_.aggregate, &running_, &first_struct_);
    MappedStruct partial(setup_.aggregate, &partial_, &second_struct_);
    aggregate_(params_.data(), running.get(), partial.get());
    running.write_back();
    return reply(1, &running_);
  }

  Status update(const HookCall& c) {
    if (!update_) return fail("the library defines no update_global_state");
    if (!load(c.first, setup_.aggregate, &result_) || !load(c.second, setup_.state, &state_))
      return fail("a section of the wrong size");
    MappedStruct result(setup_.aggregate, &result_, &first_struct_);
    MappedStruct st(setup_.state, &state_, &second_struct_);
    const int done = update_(params_.data(), result.get(), st.get(), c.iteration);
    st.write_back();
    return reply(done != 0 ? 1 : 0, &state_);
  }

  FrameChannel* channel_;
  InitFn init_;
  AggregateFn aggregate_;
  UpdateFn update_;
  void* context_;
  bool have_setup_ = false;
  HookSetup setup_;
  AlignedBytes params_, state_, running_, partial_, result_;
  // What every call reuses: the structs its hook is given, its reply's head.
  AlignedBytes first_struct_, second_struct_;
  std::string head_;
};

// Before the library loads: the hooks read only the system's files and
// their own library, write nowhere, start no process, reach no other
// process and no TCP port, and have hook_data_limit_bytes() of memory
// (sandbox/sandbox.h).
void enter_hook_sandbox(const std::string& library) {
  SandboxSpec spec;
  spec.restrict_reads = true;
  spec.read_beneath = system_read_paths();
  spec.read_beneath.push_back(library);
  spec.data_limit_bytes = hook_data_limit_bytes();
  (void)enter_sandbox(spec);  // the daemon says at its start what this machine lacks
}

}  // namespace

int serve_hooks(const std::string& library) {
  auto channel = ChildProcess::parent_channel();
  if (!channel.ok()) {
    std::fprintf(stderr, "lizard hook-host: %s (it is started by the lizard daemons)\n",
                 channel.status().message().c_str());
    return 2;
  }
  // A hook that crashes ends this process by its signal, which the daemon
  // reports, even where a runtime (a sanitizer's) installed handlers of its
  // own; and it leaves no core file behind in the daemon's directory.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, SIG_DFL);
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  enter_hook_sandbox(library);
  // The library's static initialisers run here.
  auto lib = SharedLibrary::open(library);
  if (!lib.ok()) {
    (void)channel->send(encode_failed(lib.status().message()));
    return 1;
  }
  auto init = lib->symbol<InitFn>("init_global_state");
  auto aggregate = lib->symbol<AggregateFn>("aggregate");
  auto update = lib->symbol<UpdateFn>("update_global_state");
  flush_output();  // what the static initialisers printed
  if (!channel->send(encode_ready({init != nullptr, aggregate != nullptr, update != nullptr})).ok())
    return 0;
  HookServer server(&channel.value(), init, aggregate, update,
                    lib->raw_symbol("lizard_hook_context"));
  std::string frame;  // every call's, its capacity reused
  for (;;) {
    if (!ChildProcess::receive_request(&channel.value(), &frame).ok())
      return 0;  // the parent closed the channel
    if (!server.handle(frame).ok()) return 0;
  }
}

std::optional<int> hook_host_command(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], kHookHostCommand) != 0) return std::nullopt;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s %s LIBRARY.so\n", argv[0], kHookHostCommand);
    return 2;
  }
  return serve_hooks(argv[2]);
}

}  // namespace lizard
