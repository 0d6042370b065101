#include "server/host_hooks.h"

namespace lizard {

Result<std::shared_ptr<HostHooks>> HostHooks::build(const ProgramImage& image,
                                                    const HostCompiler& compiler) {
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
  LIZARD_ASSIGN_OR_RETURN(hooks->lib_, SharedLibrary::open(so.value()));
  hooks->init_ = hooks->lib_.symbol<InitFn>("init_global_state");
  hooks->aggregate_ = hooks->lib_.symbol<AggregateFn>("aggregate");
  hooks->update_ = hooks->lib_.symbol<UpdateFn>("update_global_state");
  if (!hooks->init_ && !hooks->aggregate_ && !hooks->update_)
    return invalid_argument(src +
                            " defines none of the hooks init_global_state, aggregate, "
                            "update_global_state (are they declared extern \"C\"?)");
  if (image.manifest.has_custom_reducer() && !hooks->aggregate_)
    return invalid_argument(src + ": the manifest has a `custom` reducer but " + src +
                            " defines no extern \"C\" aggregate() hook");
  return hooks;
}

bool HostHooks::init_state(const Manifest& m, const ParamValues& p, SectionBuffer* state) const {
  if (!init_) return false;
  auto params = pack_params(params_layout(m), p);
  StructLayout sl = state_layout(m);
  auto st = pack_section(sl, *state, reinterpret_cast<uint64_t>(state->bytes.data()));
  init_(params.data(), st.data());
  unpack_section_values(sl, st, state);
  return true;
}

bool HostHooks::aggregate(const Manifest& m, const ParamValues& p, SectionBuffer* running,
                          SectionBuffer* partial) const {
  if (!aggregate_) return false;
  auto params = pack_params(params_layout(m), p);
  StructLayout al = aggregate_layout(m);
  auto r = pack_section(al, *running, reinterpret_cast<uint64_t>(running->bytes.data()));
  auto q = pack_section(al, *partial, reinterpret_cast<uint64_t>(partial->bytes.data()));
  aggregate_(params.data(), r.data(), q.data());
  return true;
}

bool HostHooks::update_state(const Manifest& m, const ParamValues& p, SectionBuffer* agg,
                             SectionBuffer* state, int64_t iteration) const {
  if (!update_) return true;
  auto params = pack_params(params_layout(m), p);
  StructLayout sl = state_layout(m);
  auto a = pack_section(aggregate_layout(m), *agg, reinterpret_cast<uint64_t>(agg->bytes.data()));
  auto st = pack_section(sl, *state, reinterpret_cast<uint64_t>(state->bytes.data()));
  int done = update_(params.data(), a.data(), st.data(), iteration);
  unpack_section_values(sl, st, state);
  return done != 0;
}

}  // namespace lizard
