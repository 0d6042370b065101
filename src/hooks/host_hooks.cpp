#include "hooks/host_hooks.h"

#include "hooks/idle_hook_processes.h"

namespace lizard {

Result<std::shared_ptr<HostHooks>> HostHooks::build(const ProgramImage& image,
                                                    const HostCompiler& compiler,
                                                    const HookProcessOptions& options) {
  auto hooks = std::make_shared<HostHooks>();
  const std::string& src = image.manifest.host_source;
  if (src.empty()) {
    if (image.manifest.has_custom_reducer())
      return invalid_argument(
          "config.yaml: aggregate: a `custom` reducer needs sources.host with an "
          "extern \"C\" aggregate() hook");
    return hooks;
  }
  std::map<std::string, std::string> files = image.sources;
  files["lizard_program.h"] = image.header;
  auto so = compiler.build_shared(files, {src}, {"-O2", "-fvisibility=default"});
  if (!so.ok()) {
    if (so.status().code() == Code::kCompileError)
      return compile_error(src + ": build failed on the server:\n" + so.status().message());
    return so.status();
  }
  // Loaded in a hook process, never here: its static initialisers run there.
  HookProcessOptions check = options;
  check.interrupted = nullptr;
  auto process = HookProcess::start(so.value(), src, check);
  if (!process.ok()) {
    if (process.status().code() == Code::kRuntimeError)
      return compile_error(src + " does not load on the server: " + process.status().message());
    return process.status();
  }
  hooks->hooks_ = (*process)->hooks();
  hooks->library_ = so.value();
  hooks->source_ = src;
  hooks->keep_idle(std::move(process).value());  // the first run's
  if (!hooks->hooks_.any())
    return invalid_argument(src +
                            " defines none of the hooks init_global_state, aggregate, "
                            "update_global_state (are they declared extern \"C\"?)");
  if (image.manifest.has_custom_reducer() && !hooks->hooks_.aggregate)
    return invalid_argument(src + ": the manifest has a `custom` reducer but " + src +
                            " defines no extern \"C\" aggregate() hook");
  return hooks;
}

Result<std::unique_ptr<RunHooks>> HostHooks::start(const Manifest& m, const ParamValues& p,
                                                   const RunValues& values,
                                                   const SectionBuffer& state,
                                                   const SectionBuffer& aggregate,
                                                   HookProcessOptions options) const {
  if (library_.empty()) return std::make_unique<RunHooks>();
  // An idle process takes this run's limits, params and layouts; one that
  // cannot (it died while idle) is dropped for a new one.
  std::unique_ptr<HookProcess> process = take_idle();
  if (process) {
    process->set_options(options);
    if (!process->setup(m, p, values, state, aggregate).ok()) process.reset();
  }
  if (!process) {
    LIZARD_ASSIGN_OR_RETURN(process, HookProcess::start(library_, source_, std::move(options)));
    LIZARD_RETURN_IF_ERROR(process->setup(m, p, values, state, aggregate));
  }
  return std::make_unique<RunHooks>(std::move(process), weak_from_this());
}

HostHooks::~HostHooks() {
  IdleHookProcesses::instance().drop(this);
}

size_t HostHooks::idle_processes() const {
  return IdleHookProcesses::instance().size(this);
}

void HostHooks::keep_idle(std::unique_ptr<HookProcess> process) const {
  process->set_interrupted(nullptr);
  IdleHookProcesses::instance().keep(this, std::move(process));
}

std::unique_ptr<HookProcess> HostHooks::take_idle() const {
  return IdleHookProcesses::instance().take(this);
}

RunHooks::~RunHooks() {
  if (!process_ || !process_->usable()) return;
  if (auto home = home_.lock()) home->keep_idle(std::move(process_));
}

Result<bool> RunHooks::init_state(SectionBuffer* state) {
  if (!process_) return false;
  return process_->init_state(state);
}

Status RunHooks::aggregate(SectionBuffer* running, const SectionBuffer& partial,
                           int64_t iteration) {
  if (!process_) return Status::Ok();
  return process_->aggregate(running, partial, iteration);
}

Result<bool> RunHooks::update_state(const SectionBuffer& aggregate, SectionBuffer* state,
                                    int64_t iteration) {
  if (!process_) return true;
  return process_->update_state(aggregate, state, iteration);
}

}  // namespace lizard
