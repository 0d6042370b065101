#include "server/accept_backoff.h"

#include <cerrno>

namespace lizard {

bool AcceptBackoff::out_of_resources(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

AcceptBackoff::Step AcceptBackoff::failed(int err, const std::string& message,
                                          Clock::time_point now) {
  Step step;
  failing_ = true;
  ++unlogged_;
  const bool resources = out_of_resources(err);
  if (resources) step.delay = kRetryDelay;
  if (!may_log(now)) return step;
  step.warning = "accept failed: " + message;
  if (unlogged_ > 1)
    step.warning += " (" + std::to_string(unlogged_) + " failures since the last message)";
  if (resources)
    step.warning += "; accepting again every " + std::to_string(kRetryDelay.count()) +
                    " ms, serving the open connections meanwhile";
  logged_ = true;
  last_line_ = now;
  unlogged_ = 0;
  return step;
}

std::string AcceptBackoff::accepted(Clock::time_point now) {
  if (!failing_ || !may_log(now)) return "";
  std::string note = "accepting connections again";
  if (unlogged_ > 0) note += " (after " + std::to_string(unlogged_) + " more failed accepts)";
  failing_ = false;
  logged_ = true;
  last_line_ = now;
  unlogged_ = 0;
  return note;
}

}  // namespace lizard
