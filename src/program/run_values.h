// RunValues: the values of one run that its kernels see in `data` (dataset_t)
// between `first_row` and the field pointers, the same on every executor.
// The table run_value_members() names each one once: the generated header's
// members (layout.h), their packing, the names programs may not use
// (manifest.h), and their codec on the wire (protocol/run_spec.h) all follow
// it, so a new value is a member here and an entry in the table.
//
//   RunValues v;  v.generate_seed = 7;
//   for (const RunValueMember& m : run_value_members()) use(m.name, v.*m.member);
#pragma once

#include <cstdint>
#include <vector>

namespace lizard {

struct RunValues {
  uint64_t generate_seed = 0;  // the generators' seed (the dataset sources' "seed")
  uint64_t run_seed = 0;       // the run's seed (the request's "seed", else drawn at random)
};

// One value of RunValues: its name in dataset_t, and its member.
struct RunValueMember {
  const char* name;
  uint64_t RunValues::*member;
};

// Every value of RunValues, in the order dataset_t lays them out.
inline const std::vector<RunValueMember>& run_value_members() {
  static const std::vector<RunValueMember> members = {
      {"generate_seed", &RunValues::generate_seed},
      {"run_seed", &RunValues::run_seed},
  };
  return members;
}

}  // namespace lizard
