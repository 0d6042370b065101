// for_each_parallel: runs f(i) for i in [0, n) at once, one thread each (on
// the caller's thread when n is 1), and returns each call's Status.  For a
// handful of long calls such as one per GPU, not for fine-grained work.
//
//   std::vector<Status> r = for_each_parallel(gpus.size(), [&](size_t i) { return build(i); });
//   Status st = first_error(r);
#pragma once

#include <future>
#include <vector>

#include "common/status.h"

namespace lizard {

template <typename F>
std::vector<Status> for_each_parallel(size_t n, F f) {
  std::vector<Status> out(n);
  if (n == 1) {
    out[0] = f(0);
    return out;
  }
  std::vector<std::future<Status>> fs;
  for (size_t i = 0; i < n; ++i) fs.push_back(std::async(std::launch::async, f, i));
  for (size_t i = 0; i < n; ++i) out[i] = fs[i].get();
  return out;
}

inline Status first_error(const std::vector<Status>& v) {
  for (const auto& s : v)
    if (!s.ok()) return s;
  return Status::Ok();
}

}  // namespace lizard
