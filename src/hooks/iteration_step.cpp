#include "hooks/iteration_step.h"

#include <cstring>
#include <string>

#include "program/reducers.h"

namespace lizard {

Result<IterationStep> IterationStep::make(const Manifest& m, const ParamValues& params,
                                          IterationHooks* hooks, int64_t max_iterations) {
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer partial, make_section(m.aggregate, m, params));
  return IterationStep(std::move(partial), m.has_custom_reducer(), hooks, max_iterations);
}

void IterationStep::start(SectionBuffer* agg) const {
  set_identity(agg);
}

Status IterationStep::fold(SectionBuffer* agg, const SectionBuffer& partial, int64_t iteration) {
  fold_into(agg, partial);
  if (custom_ && hooks_) return hooks_->aggregate(agg, partial, iteration);
  return Status::Ok();
}

Status IterationStep::fold_packed(SectionBuffer* agg, std::string_view bytes, int64_t iteration) {
  const size_t n = partial_.bytes.size();
  if (n == 0) return Status::Ok();
  if (bytes.size() % n != 0)
    return internal_error("an aggregate of " + std::to_string(bytes.size()) +
                          " bytes; expected a multiple of " + std::to_string(n));
  for (size_t off = 0; off < bytes.size(); off += n) {
    std::memcpy(partial_.bytes.data(), bytes.data() + off, n);
    LIZARD_RETURN_IF_ERROR(fold(agg, partial_, iteration));
  }
  return Status::Ok();
}

Result<bool> IterationStep::finish(const SectionBuffer& agg, SectionBuffer* state,
                                   int64_t iteration) {
  bool done = true;  // without an update hook, a run is one iteration
  if (hooks_) {
    LIZARD_ASSIGN_OR_RETURN(done, hooks_->update_state(agg, state, iteration));
  }
  return stops_after(iteration, done);
}

Result<bool> IterationStep::run(const std::vector<const SectionBuffer*>& partials,
                                SectionBuffer* agg, SectionBuffer* state, int64_t iteration) {
  start(agg);
  for (const SectionBuffer* p : partials) LIZARD_RETURN_IF_ERROR(fold(agg, *p, iteration));
  return finish(*agg, state, iteration);
}

}  // namespace lizard
