// Writes one frame of every message type (protocol/wire_samples.h, each
// field set) into DIR: the seed corpus of fuzz_wire (tests/fuzz/corpus/wire/).
// Not built by default.
//
//   wire_seeds tests/fuzz/corpus/wire
#include <cstdio>
#include <fstream>
#include <string>

#include "protocol/wire_samples.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  for (const lizard::WireSample& s : lizard::wire_samples()) {
    std::ofstream out(std::string(argv[1]) + "/" + s.name + ".bin", std::ios::binary);
    const std::string frame = lizard::encode(s.message);
    out.write(frame.data(), static_cast<std::streamsize>(frame.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s/%s.bin\n", argv[1], s.name.c_str());
      return 1;
    }
  }
  return 0;
}
