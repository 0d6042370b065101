#include "program/reducers.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace lizard {
namespace {

template <typename T>
T identity(Reducer r) {
  switch (r) {
    case Reducer::kMin:
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
    case Reducer::kMax:
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    case Reducer::kProd:
      return T(1);
    default:
      return T(0);
  }
}

template <typename T>
void fold(Reducer r, T* acc, const T* in, int64_t n) {
  switch (r) {
    case Reducer::kSum:
      for (int64_t i = 0; i < n; ++i) acc[i] = static_cast<T>(acc[i] + in[i]);
      break;
    case Reducer::kProd:
      for (int64_t i = 0; i < n; ++i) acc[i] = static_cast<T>(acc[i] * in[i]);
      break;
    case Reducer::kMin:
      for (int64_t i = 0; i < n; ++i) acc[i] = std::min(acc[i], in[i]);
      break;
    case Reducer::kMax:
      for (int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], in[i]);
      break;
    default:
      break;
  }
}

}  // namespace

void set_identity(SectionBuffer* section) {
  for (const auto& s : section->slots) {
    visit_dtype(s.spec->type, [&](auto t) {
      using T = decltype(t);
      T v = identity<T>(s.spec->reduce);
      T* p = reinterpret_cast<T*>(section->data(s));
      std::fill(p, p + s.count, v);
    });
  }
}

void fold_into(SectionBuffer* running, const SectionBuffer& partial) {
  for (size_t k = 0; k < running->slots.size() && k < partial.slots.size(); ++k) {
    const FieldSlot& s = running->slots[k];
    visit_dtype(s.spec->type, [&](auto t) {
      using T = decltype(t);
      fold<T>(s.spec->reduce, reinterpret_cast<T*>(running->data(s)),
              reinterpret_cast<const T*>(partial.data(partial.slots[k])), s.count);
    });
  }
}

}  // namespace lizard
