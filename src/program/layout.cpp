#include "program/layout.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace lizard {

using nlohmann::json;

int64_t ParamValue::as_int() const {
  if (dtype_is_float(type)) return static_cast<int64_t>(f);
  return dtype_is_signed(type) ? i : static_cast<int64_t>(u);
}

json ParamValue::to_json() const {
  if (type == DType::kFloat32) {  // print the float's shortest decimal, not the widened double
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(f));
    return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
  }
  if (dtype_is_float(type)) return f;
  if (dtype_is_signed(type)) return i;
  return u;
}

std::optional<int64_t> ParamValues::lookup(const Manifest& m, const std::string& name) const {
  for (size_t k = 0; k < m.params.size() && k < values.size(); ++k)
    if (m.params[k].name == name) return values[k].as_int();
  return std::nullopt;
}

json ParamValues::to_json(const Manifest& m) const {
  json out = json::object();
  for (size_t k = 0; k < m.params.size() && k < values.size(); ++k)
    out[m.params[k].name] = values[k].to_json();
  return out;
}

namespace {

template <typename T>
bool in_range(double v) {
  return v >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
         v <= static_cast<double>(std::numeric_limits<T>::max());
}

Result<ParamValue> convert_param(const ParamSpec& spec, const json& v) {
  ParamValue out{spec.type};
  const std::string where = "param '" + spec.name + "'";
  if (!v.is_number())
    return invalid_argument(where + ": expected a number (" + dtype_name(spec.type) + "), got " +
                            std::string(v.type_name()));
  if (dtype_is_float(spec.type)) {
    out.f = v.get<double>();
    if (spec.type == DType::kFloat32) {
      // Past the largest float it would round to infinity, which JSON cannot
      // carry (the run's record would say null).
      if (!std::isfinite(out.f) || std::fabs(out.f) > std::numeric_limits<float>::max())
        return invalid_argument(where + ": " + v.dump() + " is out of range for float32");
      out.f = static_cast<float>(out.f);
    }
    if (!std::isfinite(out.f))
      return invalid_argument(where + ": " + v.dump() + " is out of range for " +
                              dtype_name(spec.type));
    return out;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d != std::floor(d))
      return invalid_argument(where + ": expected an integer (" + dtype_name(spec.type) +
                              "), got " + v.dump());
  }
  bool ok = visit_dtype(spec.type, [&](auto t) {
    using T = decltype(t);
    if (v.is_number_unsigned()) {
      uint64_t x = v.get<uint64_t>();
      if (x > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
      out.u = x;
      out.i = static_cast<int64_t>(x);
      return true;
    }
    if (v.is_number_integer()) {
      int64_t x = v.get<int64_t>();
      if (std::numeric_limits<T>::is_signed
              ? (x < static_cast<int64_t>(std::numeric_limits<T>::lowest()) ||
                 x > static_cast<int64_t>(std::numeric_limits<T>::max()))
              : (x < 0 ||
                 static_cast<uint64_t>(x) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
        return false;
      out.i = x;
      out.u = static_cast<uint64_t>(x);
      return true;
    }
    double d = v.get<double>();
    if (!in_range<T>(d)) return false;
    out.i = static_cast<int64_t>(d);
    out.u = static_cast<uint64_t>(d < 0 ? 0 : d);
    return true;
  });
  if (!ok)
    return invalid_argument(where + ": " + v.dump() + " is out of range for " +
                            dtype_name(spec.type));
  return out;
}

size_t align_up(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

void add_member(StructLayout* l, const std::string& name, DType type, bool pointer) {
  size_t size = pointer ? 8 : dtype_size(type);
  size_t off = align_up(l->size, size);
  l->members.push_back({name, type, pointer, off, size});
  l->size = off + size;
  l->align = std::max(l->align, size);
}

void finish(StructLayout* l) {
  if (l->members.empty()) add_member(l, "_lizard_unused", DType::kInt32, false);
  l->size = align_up(l->size, l->align);
}

StructLayout section_layout(const std::string& c_name, const std::vector<FieldSpec>& fields,
                            bool scalars_by_value) {
  StructLayout l;
  l.c_name = c_name;
  for (const auto& f : fields) add_member(&l, f.name, f.type, !(scalars_by_value && f.is_scalar()));
  finish(&l);
  return l;
}

void put(std::vector<uint8_t>* out, size_t off, const void* src, size_t n) {
  std::memcpy(out->data() + off, src, n);
}

}  // namespace

Result<ParamValues> bind_params(const Manifest& m, const json& params) {
  if (!params.is_null() && !params.is_object())
    return invalid_argument("`params` must be a JSON object");
  if (params.is_object()) {
    for (const auto& [k, v] : params.items()) {
      if (!m.find_param(k)) {
        std::string known;
        for (const auto& p : m.params) known += (known.empty() ? "" : ", ") + p.name;
        return invalid_argument("unknown param '" + k + "' (the program's params: " +
                                (known.empty() ? "none" : known) + ")");
      }
    }
  }
  ParamValues out;
  std::string missing;
  for (const auto& spec : m.params) {
    json v;
    if (params.is_object() && params.contains(spec.name)) {
      v = params[spec.name];
    } else if (spec.default_value) {
      v = dtype_is_float(spec.type) ? json(*spec.default_value)
                                    : json(static_cast<int64_t>(*spec.default_value));
    } else {
      missing += (missing.empty() ? "" : ", ") + spec.name;
      continue;
    }
    LIZARD_ASSIGN_OR_RETURN(ParamValue pv, convert_param(spec, v));
    out.values.push_back(pv);
  }
  if (!missing.empty()) return invalid_argument("missing param(s): " + missing);
  return out;
}

Result<int64_t> eval_expr(const Expr& e, const Manifest& m, const ParamValues& p, int64_t rows,
                          int64_t sm_count) {
  return e.eval([&](const std::string& n) -> std::optional<int64_t> {
    if (n == "rows" && rows >= 0) return rows;
    if (n == "sm_count" && sm_count >= 0) return sm_count;
    return p.lookup(m, n);
  });
}

std::string field_key(const Manifest& m, const FieldSpec& f) {
  for (const auto& [section, fields] :
       {std::pair<const char*, const std::vector<FieldSpec>*>{"dataset", &m.dataset},
        {"state", &m.state},
        {"aggregate", &m.aggregate}}) {
    for (const FieldSpec& g : *fields)
      if (&g == &f) return std::string(section) + "." + f.name;
  }
  return f.name;
}

Result<std::vector<int64_t>> field_dims(const FieldSpec& f, const Manifest& m, const ParamValues& p,
                                        int64_t rows) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < f.shape.size(); ++i) {
    const Expr& e = f.shape[i];
    Result<int64_t> evaluated = eval_expr(e, m, p, rows);
    if (!evaluated.ok())  // the key of the manifest it came from
      return evaluated.status().with_context(field_key(m, f) + ".shape[" + std::to_string(i) + "]");
    const int64_t d = *evaluated;
    if (d < 0)
      return invalid_argument("field '" + f.name + "': dimension \"" + e.text() + "\" is " +
                              std::to_string(d) + " (negative)");
    dims.push_back(d);
  }
  return dims;
}

Result<int64_t> row_width(const FieldSpec& f, const Manifest& m, const ParamValues& p) {
  LIZARD_ASSIGN_OR_RETURN(auto dims, field_dims(f, m, p, 0));
  int64_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i)
    if (__builtin_mul_overflow(n, dims[i], &n))
      return invalid_argument("field '" + f.name + "' is too large");
  return n;
}

Result<int64_t> field_elements(const FieldSpec& f, const Manifest& m, const ParamValues& p) {
  LIZARD_ASSIGN_OR_RETURN(auto dims, field_dims(f, m, p));
  int64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n))
      return invalid_argument("field '" + f.name + "' is too large");
  if (n > (int64_t{1} << 40) / static_cast<int64_t>(dtype_size(f.type)))
    return too_large("field '" + f.name + "' would take " + std::to_string(n * dtype_size(f.type)) +
                     " bytes");
  return n;
}

const StructMember* StructLayout::find(const std::string& name) const {
  for (const auto& mm : members)
    if (mm.name == name) return &mm;
  return nullptr;
}

StructLayout params_layout(const Manifest& m) {
  StructLayout l;
  l.c_name = "global_params_t";
  for (const auto& p : m.params) add_member(&l, p.name, p.type, false);
  finish(&l);
  return l;
}

StructLayout dataset_layout(const Manifest& m) {
  StructLayout l;
  l.c_name = "dataset_t";
  add_member(&l, "rows", DType::kInt64, false);
  add_member(&l, "first_row", DType::kInt64, false);
  for (const RunValueMember& v : run_value_members()) add_member(&l, v.name, DType::kUInt64, false);
  add_member(&l, "iteration", DType::kInt64, false);
  for (const auto& f : m.dataset) add_member(&l, f.name, f.type, true);
  finish(&l);
  return l;
}

StructLayout state_layout(const Manifest& m) {
  return section_layout("global_state_t", m.state, true);
}
StructLayout aggregate_layout(const Manifest& m) {
  return section_layout("agg_res_t", m.aggregate, false);
}

const FieldSlot* SectionBuffer::find(const std::string& name) const {
  for (const auto& s : slots)
    if (s.spec->name == name) return &s;
  return nullptr;
}

Result<uint64_t> section_bytes(const std::vector<FieldSpec>& fields, const Manifest& m,
                               const ParamValues& p) {
  uint64_t total = 0;
  for (const auto& f : fields) {
    LIZARD_ASSIGN_OR_RETURN(int64_t n, field_elements(f, m, p));  // at most 1 TiB each
    total = align_up(total + static_cast<uint64_t>(n) * dtype_size(f.type), 16);
  }
  return total;
}

Result<SectionBuffer> make_section(const std::vector<FieldSpec>& fields, const Manifest& m,
                                   const ParamValues& p) {
  SectionBuffer out;
  size_t off = 0;
  for (const auto& f : fields) {
    LIZARD_ASSIGN_OR_RETURN(int64_t n, field_elements(f, m, p));
    size_t bytes = static_cast<size_t>(n) * dtype_size(f.type);
    out.slots.push_back({&f, off, n, bytes});
    off = align_up(off + bytes, 16);
  }
  out.bytes.assign(off, 0);
  return out;
}

std::vector<uint8_t> pack_params(const StructLayout& l, const ParamValues& p) {
  std::vector<uint8_t> out(l.size, 0);
  for (size_t k = 0; k < p.values.size() && k < l.members.size(); ++k) {
    const auto& mem = l.members[k];
    const ParamValue& v = p.values[k];
    visit_dtype(v.type, [&](auto t) {
      using T = decltype(t);
      T x = dtype_is_float(v.type)
                ? static_cast<T>(v.f)
                : (dtype_is_signed(v.type) ? static_cast<T>(v.i) : static_cast<T>(v.u));
      put(&out, mem.offset, &x, sizeof(T));
    });
  }
  return out;
}

std::vector<uint8_t> pack_section(const StructLayout& l, const SectionBuffer& host, uint64_t base) {
  std::vector<uint8_t> out;
  pack_section_into(l, host, base, &out);
  return out;
}

void pack_section_into(const StructLayout& l, const SectionBuffer& host, uint64_t base,
                       std::vector<uint8_t>* out) {
  out->assign(l.size, 0);
  for (const auto& mem : l.members) {
    const FieldSlot* s = host.find(mem.name);
    if (!s) continue;  // placeholder member
    if (mem.pointer) {
      uint64_t addr = base + s->offset;
      put(out, mem.offset, &addr, 8);
    } else {
      put(out, mem.offset, host.data(*s), mem.size);
    }
  }
}

void unpack_section_values(const StructLayout& l, const std::vector<uint8_t>& packed,
                           SectionBuffer* host) {
  for (const auto& mem : l.members) {
    const FieldSlot* s = host->find(mem.name);
    if (!s || mem.pointer) continue;
    std::memcpy(host->data(*s), packed.data() + mem.offset, mem.size);
  }
}

std::vector<uint8_t> pack_dataset(const StructLayout& l, int64_t rows, int64_t first_row,
                                  const std::vector<uint64_t>& field_ptrs,
                                  const RunValues& values) {
  std::vector<uint8_t> out(l.size, 0);
  put(&out, l.members[0].offset, &rows, 8);
  put(&out, l.members[1].offset, &first_row, 8);
  const std::vector<RunValueMember>& run = run_value_members();
  for (size_t k = 0; k < run.size() && k + 2 < l.members.size(); ++k)
    put(&out, l.members[k + 2].offset, &(values.*run[k].member), 8);
  const size_t fields_at = 2 + run.size() + 1;  // past `iteration`, packed as 0
  for (size_t k = 0; k < field_ptrs.size() && k + fields_at < l.members.size(); ++k)
    put(&out, l.members[k + fields_at].offset, &field_ptrs[k], 8);
  return out;
}

size_t dataset_iteration_offset() {
  return 8 * (2 + run_value_members().size());  // every member before it is 8 bytes
}

void set_dataset_iteration(std::vector<uint8_t>* packed, int64_t iteration) {
  if (packed->size() >= dataset_iteration_offset() + 8)
    put(packed, dataset_iteration_offset(), &iteration, 8);
}

StructLayout hook_context_layout() {
  StructLayout l;
  l.c_name = "lizard_hook_context_t";
  for (const RunValueMember& v : run_value_members()) add_member(&l, v.name, DType::kUInt64, false);
  add_member(&l, "iteration", DType::kInt64, false);
  finish(&l);
  return l;
}

void write_hook_context(void* out, const RunValues& values, int64_t iteration) {
  uint8_t* at = static_cast<uint8_t*>(out);  // every member 8 bytes, in hook_context_layout order
  for (const RunValueMember& v : run_value_members()) {
    std::memcpy(at, &(values.*v.member), 8);
    at += 8;
  }
  std::memcpy(at, &iteration, 8);
}

Result<std::vector<uint64_t>> field_ptrs_at_row(const Manifest& m, const ParamValues& p,
                                                const std::vector<uint64_t>& field_ptrs,
                                                int64_t first) {
  if (field_ptrs.size() != m.dataset.size())
    return invalid_argument("expected " + std::to_string(m.dataset.size()) + " field addresses");
  std::vector<uint64_t> out;
  for (size_t k = 0; k < m.dataset.size(); ++k) {
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(m.dataset[k], m, p));
    out.push_back(field_ptrs[k] + static_cast<uint64_t>(first) * static_cast<uint64_t>(width) *
                                      dtype_size(m.dataset[k].type));
  }
  return out;
}

}  // namespace lizard
