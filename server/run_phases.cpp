#include "server/run_phases.h"

namespace lizard {
namespace {

// Calls visit(key, field) for each field of `p`, in one place for both directions.
template <typename Phases, typename Visit>
void each_field(Phases& p, Visit&& visit) {
  visit("queued_ms", p.queued_ms);
  visit("planning_ms", p.planning_ms);
  visit("loading_ms", p.loading_ms);
  visit("compile_ms", p.compile_ms);
  visit("compile_cache_hit", p.compile_cache_hit);
  visit("quick_build", p.quick_build);
  visit("quick_build_iterations", p.quick_build_iterations);
  visit("uploads_cached", p.uploads_cached);
  visit("file_bytes_read", p.file_bytes_read);
  visit("file_bytes_kept", p.file_bytes_kept);
  visit("worker_loop", p.worker_loop);
  visit("fold_tree_senders", p.fold_tree_senders);
  visit("fold_tree_failed", p.fold_tree_failed);
  visit("iterations_ms", p.iterations_ms);
  visit("outputs_ms", p.outputs_ms);
  visit("output_bytes", p.output_bytes);
}

template <typename T>
bool has_type(const nlohmann::json& v) {
  if constexpr (std::is_same_v<T, bool>)
    return v.is_boolean();
  else if constexpr (std::is_same_v<T, uint64_t>)
    return v.is_number_unsigned();
  else
    return v.is_number();
}

}  // namespace

nlohmann::json RunPhases::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  each_field(*this, [&](const char* key, const auto& field) {
    if (field) j[key] = *field;
  });
  return j;
}

RunPhases RunPhases::from_json(const nlohmann::json& j) {
  RunPhases p;
  if (!j.is_object()) return p;
  each_field(p, [&](const char* key, auto& field) {
    using T = typename std::decay_t<decltype(field)>::value_type;
    auto v = j.find(key);
    if (v != j.end() && has_type<T>(*v)) field = v->template get<T>();
  });
  return p;
}

}  // namespace lizard
