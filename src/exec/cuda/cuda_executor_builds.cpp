// CudaExecutor's program builds: the registration's build, a run's build
// of its specialised values, and the two tiers a build comes in (BuildTier,
// exec/program_variant.h).  A run (or a registration) whose optimised build
// is neither loaded nor in the host's compile cache begins on the quick
// build, while the optimised one compiles on a thread of its own; a run
// switches to it between two iterations once it has compiled, and later
// runs of the same values begin on it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>

#include "exec/cuda/cuda_device_executor.h"

namespace lizard {
namespace cuda {
namespace {

bool is_ready(const std::future<CudaExecutor::CompileOutcome>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace

std::string CudaExecutor::module_key(const ProgramVariant& variant, BuildTier tier) {
  return tier == BuildTier::kOptimised ? variant.key : variant.key + "#" + tier_name(tier);
}

// A registration's build is planned as a run's: the quick build when the
// optimised one is not in the cache, so that the program is checked and
// usable sooner, with the optimised build following in the background.
// Its generators, when it has any, compile beside the iterate kernels.
Status CudaExecutor::build(const ProgramImage& program) {
  LIZARD_RETURN_IF_ERROR(make_current());
  const ProgramVariant variant = variant_for_build(program);
  GeneratorBuild generators;
  if (!program.manifest.generate.empty()) generators = start_generators(variant);
  const ProgramVariant iterate = kernel_set(variant, KernelSet::kIterate);
  BuildPlan plan = plan_build(iterate, 0);
  CompileStats stats;
  Status st = load_program(iterate, &stats, std::move(plan.compiling), plan.tier).status();
  if (!generators.variant) return st;
  Status gen = load_generators(std::move(generators), &stats).status();
  return st.ok() ? gen : st;
}

// The generators' build: the optimised one when loaded or cached, else the
// fast one (a generator runs once per run; with quick builds off, the
// optimised).
CudaExecutor::GeneratorBuild CudaExecutor::start_generators(const ProgramVariant& variant) {
  GeneratorBuild g;
  auto owned = std::make_shared<const ProgramVariant>(kernel_set(variant, KernelSet::kGenerate));
  g.variant = owned;
  g.tier = BuildTier::kOptimised;
  auto loaded = [&](BuildTier tier) {
    auto it = modules_.find(module_key(*owned, tier));
    return it != modules_.end() && it->second.module;
  };
  if (quick_builds_ && !owned->image.hash.empty() && !loaded(BuildTier::kOptimised) &&
      (loaded(BuildTier::kFast) || !cc_->cached(owned->image, info_.arch, BuildTier::kOptimised)))
    g.tier = BuildTier::kFast;
  if (loaded(g.tier) && !owned->image.hash.empty()) return g;
  g.compiling = std::async(std::launch::async, [cc = cc_, owned, arch = info_.arch, t = g.tier] {
    return timed_compile(*cc, *owned, arch, t);
  });
  return g;
}

Result<Module*> CudaExecutor::load_generators(GeneratorBuild build, CompileStats* stats) {
  CompileStats own;
  Result<Module*> m = load_program(*build.variant, &own, std::move(build.compiling), build.tier);
  // The two builds compiled side by side.
  stats->compile_ms = std::max(stats->compile_ms, own.compile_ms);
  stats->cache_hit = stats->cache_hit && own.cache_hit;
  return m;
}

// Compiles `variant` for `arch` at `tier`, timed.
CudaExecutor::CompileOutcome CudaExecutor::timed_compile(const NvrtcCompiler& cc,
                                                         const ProgramVariant& variant,
                                                         const std::string& arch, BuildTier tier) {
  const auto start = std::chrono::steady_clock::now();
  Result<CompiledProgram> compiled = cc.compile(variant.image, arch, tier);
  return {
      std::move(compiled),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()};
}

CudaExecutor::PendingCompile CudaExecutor::compile_ahead(const ProgramVariant& variant,
                                                         BuildTier tier) const {
  auto it = modules_.find(module_key(variant, tier));
  if (it != modules_.end() && it->second.module && !variant.image.hash.empty()) return {};
  return std::async(std::launch::async, [cc = cc_, &variant, arch = info_.arch, tier] {
    return timed_compile(*cc, variant, arch, tier);
  });
}

// The first tier (BuildTier) a run of `variant` over `partition_bytes` begins
// on: first_tier_for, told whether the quick build is loaded or cached.
BuildTier CudaExecutor::first_tier(const ProgramVariant& variant, uint64_t partition_bytes) const {
  auto quick = modules_.find(module_key(variant, BuildTier::kQuick));
  const bool quick_ready = (quick != modules_.end() && quick->second.module) ||
                           cc_->cached(variant.image, info_.arch, BuildTier::kQuick);
  return first_tier_for(partition_bytes, quick_ready);
}

CudaExecutor::BuildPlan CudaExecutor::plan_build(const ProgramVariant& variant,
                                                 uint64_t partition_bytes) {
  auto optimising = optimising_.find(variant.key);
  if (optimising != optimising_.end()) {
    // Still compiling here, but another process of the host (an ahead
    // build) may have put it in the cache: then it is read from there.
    const bool compiled = is_ready(optimising->second.compiling);
    if (!compiled) {
      if (cc_->contains(variant.image.hash, optimising->second.cache_entry))
        return {BuildTier::kOptimised, compile_ahead(variant, BuildTier::kOptimised), true};
      const BuildTier tier = first_tier(variant, partition_bytes);
      // A large partition waits for the optimised compile already running.
      if (tier != BuildTier::kOptimised) return {tier, compile_ahead(variant, tier)};
    }
    PendingCompile done = std::move(optimising->second.compiling);
    optimising_.erase(optimising);
    return {BuildTier::kOptimised, std::move(done), compiled};
  }
  auto loaded = modules_.find(variant.key);
  const bool have_optimised = loaded != modules_.end() && loaded->second.module;
  if (!quick_builds_ || variant.image.hash.empty() || have_optimised)
    return {BuildTier::kOptimised, compile_ahead(variant, BuildTier::kOptimised)};
  // Named once: naming hashes the program with the device library, and the
  // cache is looked at again between iterations until the build is there.
  std::string entry = cc_->cache_key(variant.image, info_.arch, BuildTier::kOptimised);
  const BuildTier tier = first_tier(variant, partition_bytes);
  if (tier == BuildTier::kOptimised || cc_->contains(variant.image.hash, entry))
    return {BuildTier::kOptimised, compile_ahead(variant, BuildTier::kOptimised)};
  auto owned = std::make_shared<const ProgramVariant>(variant);
  optimising_[variant.key] =
      OptimisedBuild{owned,
                     std::async(std::launch::async,
                                [cc = cc_, owned, arch = info_.arch] {
                                  return timed_compile(*cc, *owned, arch, BuildTier::kOptimised);
                                }),
                     std::move(entry)};
  return {tier, compile_ahead(variant, tier)};
}

bool CudaExecutor::adopt_optimised_build(int64_t iteration) {
  Run* run = run_.get();
  if (!run || !run->quick_build) return false;
  auto it = optimising_.find(run->variant_key);
  if (it == optimising_.end()) return false;
  // Ready here, or (looked for at most every 50 ms) in the host's cache,
  // put there by another process.
  bool ready = is_ready(it->second.compiling);
  const auto now = std::chrono::steady_clock::now();
  if (!ready && now >= run->next_cache_look) {
    run->next_cache_look = now + std::chrono::milliseconds(50);
    ready = cc_->contains(it->second.variant->image.hash, it->second.cache_entry);
  }
  if (!ready) return false;
  const std::shared_ptr<const ProgramVariant> variant = it->second.variant;
  PendingCompile compiled;
  if (is_ready(it->second.compiling)) {
    compiled = std::move(it->second.compiling);
    optimising_.erase(it);
  }  // else its compile ends on its own; the build is read from the cache
  run->quick_build = false;
  CompileStats stats;
  Result<Module*> m = load_program(*variant, &stats, std::move(compiled));
  Status st = m.status();
  std::vector<CUfunction> kernels = std::move(run->kernels);
  std::vector<LaunchConfig> launches = std::move(run->launches);
  run->kernels.clear();
  run->launches.clear();
  if (st.ok()) st = prepare_launches(run, **m);
  if (!st.ok()) {  // the run stays on its quick build
    run->kernels = std::move(kernels);
    run->launches = std::move(launches);
    spdlog::warn(
        "GPU {}: the optimised build of {} cannot be used ({}); the run keeps its quick "
        "build",
        info_.ordinal, run->variant_key, st.message());
    return false;
  }
  spdlog::info(
      "GPU {}: the run switched to the optimised build of its kernels at iteration {} ({})",
      info_.ordinal, iteration,
      stats.cache_hit ? std::string("from the host's compile cache")
                      : "compiled in " + std::to_string(std::lround(stats.compile_ms)) + " ms");
  for (BuildTier first : {BuildTier::kQuick, BuildTier::kFast}) {
    auto m = modules_.find(module_key(*variant, first));
    if (m == modules_.end()) continue;
    if (m->second.module) cu_->cuModuleUnload(m->second.module);
    modules_.erase(m);
  }
  return true;
}

Result<Module*> CudaExecutor::load_program(const ProgramVariant& variant, CompileStats* stats,
                                           PendingCompile ahead, BuildTier tier) {
  *stats = CompileStats{};
  stats->quick_build = tier != BuildTier::kOptimised;
  const ProgramImage& program = variant.image;
  const std::string key = module_key(variant, tier);
  auto it = modules_.find(key);
  if (it == modules_.end() || program.hash.empty()) {
    CompileOutcome outcome =
        ahead.valid() ? ahead.get() : timed_compile(*cc_, variant, info_.arch, tier);
    if (!outcome.compiled.ok())
      return Status(outcome.compiled.status().code(),
                    outcome.compiled.status().message() + specialised_note(variant));
    CompiledProgram out = std::move(outcome.compiled).value();
    stats->cache_hit = out.from_cache;
    if (!out.from_cache) stats->compile_ms = outcome.ms;
    Module fresh;
    fresh.cubin = std::move(out.cubin);
    if (it != modules_.end()) {
      if (it->second.module) cu_->cuModuleUnload(it->second.module);
      it->second = std::move(fresh);
    } else {
      it = modules_.emplace(key, std::move(fresh)).first;
    }
  }
  Module* m = &it->second;
  if (!m->module) {
    Status st = load_module(variant, m);
    if (!st.ok()) {
      modules_.erase(it);
      return st;
    }
  }
  return m;
}

// Finds the kernels of `variant`'s kernel set in its loaded module.
Status CudaExecutor::load_module(const ProgramVariant& variant, Module* m) {
  const ProgramImage& program = variant.image;
  LIZARD_RETURN_IF_ERROR(
      check(cu_->cuModuleLoadData(&m->module, m->cubin.data()), "loading the compiled kernels"));
  m->kernels.clear();
  m->generators.clear();
  if (has_iterate_kernels(variant.kernels))
    LIZARD_RETURN_IF_ERROR(find_iterate_kernels(program, m));
  if (has_generators(variant.kernels)) LIZARD_RETURN_IF_ERROR(find_generators(program, m));
  return Status::Ok();
}

Status CudaExecutor::find_iterate_kernels(const ProgramImage& program, Module* m) const {
  for (const auto& step : program.manifest.iterate) {
    CUfunction f = nullptr;
    if (cu_->cuModuleGetFunction(&f, m->module, step.kernel.c_str()) != CUDA_SUCCESS) {
      cu_->cuModuleUnload(m->module);
      m->module = nullptr;
      return compile_error(program.manifest.cuda_source + ": kernel '" + step.kernel +
                           "' named in iterate is not defined (it must be declared "
                           "extern \"C\" __global__)");
    }
    m->kernels.push_back(f);
  }
  return Status::Ok();
}

Status CudaExecutor::find_generators(const ProgramImage& program, Module* m) const {
  for (const auto& step : program.manifest.generate) {
    CUfunction f = nullptr;
    if (cu_->cuModuleGetFunction(&f, m->module, step.kernel.c_str()) != CUDA_SUCCESS) {
      cu_->cuModuleUnload(m->module);
      m->module = nullptr;
      return compile_error(program.manifest.cuda_source + ": generator kernel '" + step.kernel +
                           "' is not defined (it must be declared extern \"C\" __global__)");
    }
    m->generators[step.kernel] = f;
  }
  return Status::Ok();
}

}  // namespace cuda
}  // namespace lizard
