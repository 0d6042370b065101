// One example of every message type, each field set to a value other than
// its default: what the protocol's round-trip tests encode and decode, and
// what tests/fuzz/wire_seeds writes as the seed corpus of fuzz_wire.
//
//   for (const WireSample& s : wire_samples()) check(s.name, encode(s.message));
#pragma once

#include <string>
#include <vector>

#include "protocol/wire.h"

namespace lizard {

struct WireSample {
  std::string name;  // the message type's name, or a variant of it ("iteration_failed")
  Message message;
};

std::vector<WireSample> wire_samples();

}  // namespace lizard
