// RunSession's part in a run's fold tree (plan/fold_tree.h): each iterate
// comes from the worker above this one (or the server) and goes on down to
// the workers below it; the worker above gets this one's iteration results
// instead of the server, and the results of the workers below it are
// folded into its own first, in the order the server planned, so that the
// answer is the same run to run.
#include <spdlog/spdlog.h>

#include <cstring>

#include "client/run_session.h"
#include "program/reducers.h"

namespace lizard {

Status RunSession::join_fold_tree(const FoldPlace& place, bool* unreachable) {
  fold_ = place;
  if (place.empty()) return Status::Ok();
  if (!ctx_.fold_links)
    return invalid_argument("this worker takes no fold links (it runs with --fold-port -1)");
  if (program_->manifest.has_custom_reducer())
    return invalid_argument("a run with a custom reducer folds at the server, not in a tree");
  LIZARD_ASSIGN_OR_RETURN(folded_,
                          make_section(program_->manifest.aggregate, program_->manifest, params_));
  child_partial_ = folded_;
  if (!place.children.empty()) fold_inbox_ = ctx_.fold_links->inbox(run_id_);
  if (place.parent_id.empty()) return Status::Ok();
  from_above_ = std::make_shared<FromAbove>();
  from_above_->session = this;
  auto up = ctx_.fold_links->dial(place.parent_address, run_id_, ctx_.worker_id,
                                  std::chrono::seconds(5), [from = from_above_](std::string f) {
                                    std::lock_guard<std::mutex> l(from->mu);
                                    if (from->session) from->session->post(std::move(f));
                                  });
  if (!up.ok()) {
    *unreachable = true;
    return up.status().with_context("the fold tree's worker " + place.parent_id +
                                    " above this one");
  }
  fold_parent_ = std::move(up).value();
  return Status::Ok();
}

Status RunSession::fold_children(int64_t it) {
  const std::vector<const SectionBuffer*>& own = engine_.partials();
  if (own.size() != 1 || own[0]->bytes.size() != folded_.bytes.size())
    return internal_error("the run's own aggregate does not have the aggregate's layout");
  std::memcpy(folded_.bytes.data(), own[0]->bytes.data(), folded_.bytes.size());
  if (fold_.children.empty()) return Status::Ok();
  const auto wait = std::chrono::milliseconds(static_cast<int64_t>(fold_.wait_s * 1000));
  if (Status st = fold_inbox_->take(
          it, fold_.children, wait, [this] { return aborting_.load(); }, &child_frames_);
      !st.ok()) {
    result_msg_.fold_failed = st.code() == Code::kUnavailable;
    return Status(st.code(), "worker " + ctx_.worker_id + ": " + st.message());
  }
  for (size_t k = 0; k < child_frames_.size(); ++k) {
    const std::string& child = fold_.children[k];
    auto view = decode_view(child_frames_[k]);
    if (!view.ok()) return view.status().with_context("worker " + child + "'s result");
    LIZARD_RETURN_IF_ERROR(child_result_.read(view->packed));
    result_msg_.kernel_ms = std::max(result_msg_.kernel_ms, child_result_.kernel_ms);
    result_msg_.quick_build = result_msg_.quick_build || child_result_.quick_build;
    if (!child_result_.ok) {  // already names the worker it failed on
      result_msg_.fold_failed = child_result_.fold_failed;
      return runtime_error(child_result_.error);
    }
    if (view->payload.size() != child_partial_.bytes.size())
      return invalid_argument("worker " + child + " sent an aggregate of " +
                              std::to_string(view->payload.size()) + " bytes; expected " +
                              std::to_string(child_partial_.bytes.size()));
    std::memcpy(child_partial_.bytes.data(), view->payload.data(), view->payload.size());
    fold_into(&folded_, child_partial_);
  }
  return Status::Ok();
}

void RunSession::send_result(std::string frame) {
  if (!fold_parent_) return reply(std::move(frame));
  if (!aborting_) fold_parent_->send(OutgoingFrame(std::move(frame)));
}

void RunSession::send_down(const std::string& frame) {
  auto shared = std::make_shared<const std::string>(frame);  // one copy for every child
  sent_down_ = ctx_.fold_links->send_down(run_id_, fold_.children, shared, std::chrono::seconds(2));
}

void RunSession::leave_fold_tree() {
  if (from_above_) {
    std::lock_guard<std::mutex> l(from_above_->mu);
    from_above_->session = nullptr;
  }
  from_above_.reset();
  sent_down_ = Status::Ok();
  if (fold_parent_) fold_parent_->close();
  fold_parent_.reset();
  if (fold_inbox_ && ctx_.fold_links) ctx_.fold_links->forget(run_id_);
  fold_inbox_.reset();
  fold_ = {};
}

}  // namespace lizard
