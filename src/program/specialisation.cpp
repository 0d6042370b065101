#include "program/specialisation.h"

#include <cmath>

namespace lizard {

std::string Specialisation::key() const {
  std::string out;
  for (const auto& [name, v] : values)
    out += (out.empty() ? "" : ",") + name + "=" + v.to_json().dump();
  return out;
}

nlohmann::json Specialisation::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, v] : values) out[name] = v.to_json();
  return out;
}

Specialisation run_specialisation(const Manifest& m, const ParamValues& p) {
  Specialisation s;
  for (size_t k = 0; k < m.params.size() && k < p.values.size(); ++k)
    if (m.params[k].specialize) s.values[m.params[k].name] = p.values[k];
  return s;
}

Specialisation default_specialisation(const Manifest& m) {
  Specialisation s;
  for (const ParamSpec& spec : m.params) {
    if (!spec.specialize || !spec.default_value) continue;
    ParamValue v{spec.type};
    const double d = *spec.default_value;
    if (dtype_is_float(spec.type)) {
      v.f = spec.type == DType::kFloat32 ? static_cast<float>(d) : d;
    } else {  // the parser checked that the default is a whole number in range
      v.i = static_cast<int64_t>(d);
      v.u = d < 0 ? 0 : static_cast<uint64_t>(d);
      if (!dtype_is_signed(spec.type)) v.i = static_cast<int64_t>(v.u);
    }
    s.values[spec.name] = v;
  }
  return s;
}

std::string specialised_storage_name(const std::string& param) {
  return "lizard_specialised_" + param;
}

}  // namespace lizard
