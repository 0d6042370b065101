// The mechanism that turns one table of fields per message into that
// message's JSON encoder, its decoder and its reference documentation.  A
// schema is a struct naming the C++ type it describes, a name, and its
// fields: each a JSON key, a member, whether it is required, and what it
// means.  The tables themselves are in protocol/message_schemas.h.
//
//   template <>
//   struct WireSchema<WelcomeMsg> {
//     using Type = WelcomeMsg;
//     static constexpr const char* kName = "welcome";
//     static auto fields() {
//       return std::make_tuple(required("worker_id", &WelcomeMsg::worker_id, "the worker's id"));
//     }
//   };
//   nlohmann::json h = to_header(WelcomeMsg{"w1"});
//   Result<WelcomeMsg> back = from_header<WelcomeMsg>(h);
//
// A required field that is absent (or null) fails decoding with an error
// naming the message and the field: `run_ready: missing required field "ok"`.
// An optional one keeps the member's default; keys the schema does not list
// are ignored.  A schema may add `static std::string check(const Type&)`,
// returning why a decoded value is unacceptable ("" when it is fine).
// A field's value is written and read by a codec: a struct with `Value`,
// `write`, `read` (returning "" or the error, starting with the separator
// that follows the field's name) and `type` (for the docs).  The default codec
// of a member type is picked by DefaultCodec; a field may name another.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/status.h"

namespace lizard {

// The schema of a struct that crosses the wire; specialised per struct.
template <typename T>
struct WireSchema;

namespace wire_schema {

using nlohmann::json;

enum class Presence {
  kRequired,          // always written; decoding fails without it
  kOptional,          // always written; absent: the member's default
  kOmittedWhenEmpty,  // written only when not empty; absent: empty
};

struct StringCodec {
  using Value = std::string;
  static json write(const Value& v) { return v; }
  static std::string read(const json& j, Value* out) {
    if (!j.is_string()) return " is not a string";
    *out = j.get<std::string>();
    return {};
  }
  static std::string type() { return "string"; }
};

struct BoolCodec {
  using Value = bool;
  static json write(Value v) { return v; }
  static std::string read(const json& j, Value* out) {
    if (!j.is_boolean()) return " is not a boolean";
    *out = j.get<bool>();
    return {};
  }
  static std::string type() { return "boolean"; }
};

struct IntCodec {
  using Value = int64_t;
  static json write(Value v) { return v; }
  static std::string read(const json& j, Value* out) {
    if (!j.is_number_integer()) return " is not an integer";
    *out = j.get<int64_t>();
    return {};
  }
  static std::string type() { return "integer"; }
};

struct CountCodec {
  using Value = uint64_t;
  static json write(Value v) { return v; }
  static std::string read(const json& j, Value* out) {
    if (j.is_number_unsigned())
      *out = j.get<uint64_t>();
    else if (j.is_number_integer() && j.get<int64_t>() >= 0)
      *out = static_cast<uint64_t>(j.get<int64_t>());
    else
      return " is not a non-negative integer";
    return {};
  }
  static std::string type() { return "non-negative integer"; }
};

struct NumberCodec {
  using Value = double;
  static json write(Value v) { return v; }
  static std::string read(const json& j, Value* out) {
    if (!j.is_number()) return " is not a number";
    *out = j.get<double>();
    return {};
  }
  static std::string type() { return "number"; }
};

struct ObjectCodec {
  using Value = json;
  static json write(const Value& v) { return v; }
  static std::string read(const json& j, Value* out) {
    if (!j.is_object()) return " is not an object";
    *out = j;
    return {};
  }
  static std::string type() { return "object"; }
};

template <typename Elem>
struct ListCodec {
  using Value = std::vector<typename Elem::Value>;
  static json write(const Value& v) {
    json out = json::array();
    for (const auto& e : v) out.push_back(Elem::write(e));
    return out;
  }
  static std::string read(const json& j, Value* out) {
    if (!j.is_array()) return " is not a list";
    out->clear();
    out->reserve(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
      typename Elem::Value e{};
      if (std::string why = Elem::read(j[i], &e); !why.empty())
        return "[" + std::to_string(i) + "]" + why;
      out->push_back(std::move(e));
    }
    return {};
  }
  static std::string type() { return "[" + Elem::type() + "]"; }
};

template <typename Schema>
struct ObjectOf;

// A member type's codec: structs with a WireSchema are objects of it.
template <typename T>
struct DefaultCodec {
  using type = ObjectOf<WireSchema<T>>;
};
template <>
struct DefaultCodec<std::string> {
  using type = StringCodec;
};
template <>
struct DefaultCodec<bool> {
  using type = BoolCodec;
};
template <>
struct DefaultCodec<int64_t> {
  using type = IntCodec;
};
template <>
struct DefaultCodec<uint64_t> {
  using type = CountCodec;
};
template <>
struct DefaultCodec<double> {
  using type = NumberCodec;
};
template <>
struct DefaultCodec<json> {
  using type = ObjectCodec;
};
template <typename T>
struct DefaultCodec<std::vector<T>> {
  using type = ListCodec<typename DefaultCodec<T>::type>;
};

// One field of a schema: `member` of `Owner`, written and read by `Codec`.
template <typename Owner, typename Codec>
struct Field {
  using Value = typename Codec::Value;
  using CodecType = Codec;
  const char* name;
  Value Owner::*member;
  Presence presence;
  const char* doc;
};

template <typename Codec, typename T>
using CodecFor = std::conditional_t<std::is_void_v<Codec>, typename DefaultCodec<T>::type, Codec>;

template <typename Codec = void, typename Owner, typename T>
Field<Owner, CodecFor<Codec, T>> required(const char* name, T Owner::*member, const char* doc) {
  return {name, member, Presence::kRequired, doc};
}
template <typename Codec = void, typename Owner, typename T>
Field<Owner, CodecFor<Codec, T>> optional(const char* name, T Owner::*member, const char* doc) {
  return {name, member, Presence::kOptional, doc};
}
template <typename Codec = void, typename Owner, typename T>
Field<Owner, CodecFor<Codec, T>> omitted_when_empty(const char* name, T Owner::*member,
                                                    const char* doc) {
  return {name, member, Presence::kOmittedWhenEmpty, doc};
}

template <typename Schema, typename = void>
struct HasCheck : std::false_type {};
template <typename Schema>
struct HasCheck<Schema, std::void_t<decltype(Schema::check(std::declval<typename Schema::Type>()))>>
    : std::true_type {};

// Whether a value counts as empty, for kOmittedWhenEmpty: lists and strings.
template <typename T>
auto is_empty(const T& v, int) -> decltype(v.empty()) {
  return v.empty();
}
template <typename T>
bool is_empty(const T&, long) {
  return false;
}

template <typename Schema>
json write_fields(const typename Schema::Type& v) {
  json out = json::object();
  std::apply(
      [&](const auto&... f) {
        auto one = [&](const auto& field) {
          const auto& value = v.*(field.member);
          if (field.presence == Presence::kOmittedWhenEmpty && is_empty(value, 0)) return;
          using C = typename std::decay_t<decltype(field)>::CodecType;
          out[field.name] = C::write(value);
        };
        (one(f), ...);
      },
      Schema::fields());
  return out;
}

// Reads the schema's fields of `j` into *out; "" or the first error.
template <typename Schema>
std::string read_fields(const json& j, typename Schema::Type* out) {
  if (!j.is_object()) return "not an object";
  std::string error;
  std::apply(
      [&](const auto&... f) {
        auto one = [&](const auto& field) {
          if (!error.empty()) return;
          auto it = j.find(field.name);
          if (it == j.end() || it->is_null()) {
            if (field.presence == Presence::kRequired)
              error = std::string("missing required field \"") + field.name + "\"";
            return;
          }
          using C = typename std::decay_t<decltype(field)>::CodecType;
          std::string why = C::read(*it, &(out->*(field.member)));
          if (!why.empty()) error = std::string("field \"") + field.name + "\"" + why;
        };
        (one(f), ...);
      },
      Schema::fields());
  if constexpr (HasCheck<Schema>::value) {
    if (error.empty()) error = Schema::check(*out);
  }
  return error;
}

template <typename Schema>
struct ObjectOf {
  using Value = typename Schema::Type;
  static json write(const Value& v) { return write_fields<Schema>(v); }
  static std::string read(const json& j, Value* out) {
    std::string why = read_fields<Schema>(j, out);
    return why.empty() ? why : ": " + why;
  }
  static std::string type() { return std::string(Schema::kName); }
};

// What the reference documentation shows of a field.
struct FieldDoc {
  std::string name, type;
  Presence presence = Presence::kOptional;
  std::string default_value;  // of an optional field, as JSON
  std::string doc;
};

template <typename Schema>
std::vector<FieldDoc> describe_fields() {
  std::vector<FieldDoc> out;
  const typename Schema::Type defaults{};
  std::apply(
      [&](const auto&... f) {
        auto one = [&](const auto& field) {
          using C = typename std::decay_t<decltype(field)>::CodecType;
          FieldDoc d{field.name, C::type(), field.presence, "", field.doc};
          if (field.presence == Presence::kOptional)
            d.default_value = C::write(defaults.*(field.member)).dump();
          out.push_back(std::move(d));
        };
        (one(f), ...);
      },
      Schema::fields());
  return out;
}

}  // namespace wire_schema

// The JSON header of a message, as its schema lists it.
template <typename M>
nlohmann::json to_header(const M& m) {
  return wire_schema::write_fields<WireSchema<M>>(m);
}

// A message read from its JSON header; an error naming the message and the
// field when the header lacks a required field or has one of the wrong type.
template <typename M>
Result<M> from_header(const nlohmann::json& h) {
  M m{};
  if (!h.is_object())
    return invalid_argument(std::string(WireSchema<M>::kName) + ": header is not an object");
  std::string why = wire_schema::read_fields<WireSchema<M>>(h, &m);
  if (!why.empty()) return invalid_argument(std::string(WireSchema<M>::kName) + ": " + why);
  return m;
}

}  // namespace lizard
