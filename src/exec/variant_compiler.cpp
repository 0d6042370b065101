#include "exec/variant_compiler.h"

#include <algorithm>
#include <vector>

#include "exec/cpu/kernel_source.h"
#include "exec/cuda/nvrtc_compiler.h"

namespace lizard {

Result<std::unique_ptr<VariantCompiler>> VariantCompiler::make(
    const BackendOptions& o, const std::vector<ExecutorInfo>& executors) {
  if (executors.empty()) return unavailable("no executors to build for");
  std::unique_ptr<VariantCompiler> vc(new VariantCompiler);
  const uint64_t bytes = o.compile_cache_mb << 20;
  if (executors.front().kind == "cpu") {
    // As CpuExecutor: the host's default cache when none is named.
    const std::string dir = (o.cache_dir.empty() ? default_cache_root() : o.cache_dir) + "/kernels";
    vc->host_ = std::make_unique<HostCompiler>(dir, bytes, o.compile_timeout_s);
    vc->cache_ = std::make_unique<CompileCache>(dir, bytes);
    vc->suffix_ = ".so";
    return vc;
  }
  if (o.cache_dir.empty()) return unavailable("the CUDA executors keep no compile cache");
  LIZARD_ASSIGN_OR_RETURN(vc->nvrtc_,
                          cuda::NvrtcCompiler::open(o.cuda_path, o.cache_dir + "/kernels", bytes));
  vc->quick_builds_ = o.quick_builds;
  vc->cache_ = std::make_unique<CompileCache>(o.cache_dir + "/kernels", bytes);
  vc->suffix_ = ".cubin";
  for (const ExecutorInfo& e : executors)
    if (std::find(vc->archs_.begin(), vc->archs_.end(), e.arch) == vc->archs_.end())
      vc->archs_.push_back(e.arch);
  return vc;
}

VariantCompiler::~VariantCompiler() = default;

bool VariantCompiler::cached(const ProgramVariant& variant, BuildTier tier) const {
  const std::vector<std::string> names = entry_names(variant, tier);
  if (names.empty()) return false;
  for (const std::string& name : names)
    if (!cache_->owned_by(variant.image.hash).contains(name, suffix_)) return false;
  return true;
}

std::vector<std::string> VariantCompiler::entry_names(const ProgramVariant& variant,
                                                      BuildTier tier) const {
  constexpr size_t kMaxNamed = 4096;
  const std::string id = variant.key + "#" + tier_name(tier);
  {
    std::lock_guard<std::mutex> l(names_mu_);
    if (auto it = names_.find(id); it != names_.end()) return it->second;
  }
  std::vector<std::string> names;
  if (host_) {
    auto plan = plan_cpu_build(variant.image);
    if (!plan.ok()) return {};
    names.push_back(host_->key_of(plan->files, plan->units, plan->flags));
  } else {
    // A build is ready for runs once its iterate kernels are; the
    // generators' build (compile() makes it beside the optimised one) is
    // not shared between workers.
    const ProgramVariant iterate = kernel_set(variant, KernelSet::kIterate);
    for (const std::string& arch : archs_)
      names.push_back(nvrtc_->cache_key(iterate.image, arch, tier));
  }
  std::lock_guard<std::mutex> l(names_mu_);
  if (names_.size() >= kMaxNamed) names_.clear();
  names_[id] = names;
  return names;
}

Status VariantCompiler::compile(const ProgramVariant& variant, bool* compiled,
                                BuildTier tier) const {
  *compiled = false;
  if (host_) {
    LIZARD_ASSIGN_OR_RETURN(CpuBuildPlan plan, plan_cpu_build(variant.image));
    bool hit = false;
    LIZARD_RETURN_IF_ERROR(host_->for_owner(variant.image.hash)
                               .build_shared(plan.files, plan.units, plan.flags, &hit, &plan.pch)
                               .status());
    *compiled = !hit;
    return Status::Ok();
  }
  // The iterate kernels, and with the optimised build the generators too
  // (a run that generates its rows loads their optimised build when the
  // cache has it, and compiles them as it begins otherwise).
  std::vector<ProgramVariant> sets{kernel_set(variant, KernelSet::kIterate)};
  if (tier == BuildTier::kOptimised && !variant.image.manifest.generate.empty())
    sets.push_back(kernel_set(variant, KernelSet::kGenerate));
  for (const ProgramVariant& set : sets)
    for (const std::string& arch : archs_) {
      LIZARD_ASSIGN_OR_RETURN(cuda::CompiledProgram out, nvrtc_->compile(set.image, arch, tier));
      *compiled = *compiled || !out.from_cache;
    }
  return Status::Ok();
}

std::vector<VariantCompiler::Entry> VariantCompiler::entries(const ProgramVariant& variant,
                                                             BuildTier tier) const {
  const std::vector<std::string> names = entry_names(variant, tier);
  std::vector<Entry> out;
  for (size_t i = 0; i < names.size(); ++i)
    out.push_back({names[i], host_ ? std::string("cpu") : archs_.at(i)});
  return out;
}

Result<std::string> VariantCompiler::read(const std::string& owner, const std::string& name) const {
  return cache_->owned_by(owner).read(name, suffix_);
}

Status VariantCompiler::store(const std::string& owner, const std::string& name,
                              const std::string& payload) const {
  return cache_->owned_by(owner).put(name, suffix_, payload);
}

void VariantCompiler::make_precompiled_headers() const {
  if (!host_) return;
  for (bool fibers : {false, true}) {
    auto plan = runtime_build_plan(fibers);
    if (plan.ok()) (void)host_->make_precompiled(plan->files, plan->flags, plan->pch);
  }
}

std::string VariantCompiler::toolchain() const {
  CompileKey key;
  key.add("lizard", LIZARD_VERSION);
  if (host_)
    key.add("host", host_->toolchain());
  else
    key.add("nvrtc", std::to_string(nvrtc_->library().version()));
  return key.digest();
}

}  // namespace lizard
