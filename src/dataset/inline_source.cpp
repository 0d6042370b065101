// The `values` source: every row inline in the run request, as JSON numbers
// of the field's dtype.  Each worker gets its rows in the run_start payload
// ({"source": "inline", "offset", "bytes"}) and each part takes its slice.
#include "dataset/dataset_source.h"
#include "dataset/json_values.h"

namespace lizard {

using nlohmann::json;

namespace {

class InlineSource final : public DatasetSource {
 public:
  std::vector<std::string> request_keys() const override { return {"values"}; }
  std::vector<std::string> wire_names() const override { return {"inline"}; }
  RowDelivery delivery() const override { return RowDelivery::kRows; }

  Result<ParsedSource> parse(const json& spec, const SourceField& field,
                             const SourceContext&) const override {
    ParsedSource p;
    LIZARD_ASSIGN_OR_RETURN(p.values, values_from_json(spec["values"], field.type,
                                                       {-1, field.width}, field.what, &p.rows));
    return p;
  }

  Status to_wire(const ParsedSource& parsed, const WireRows& rows, FieldSource* out,
                 std::string* payload) const override {
    out->delivery = RowDelivery::kRows;
    out->offset = payload->size();
    out->bytes = rows.row_bytes * static_cast<size_t>(rows.rows);
    payload->append(reinterpret_cast<const char*>(parsed.values.data()) +
                        rows.row_bytes * static_cast<size_t>(rows.first_row),
                    out->bytes);
    return Status::Ok();
  }

  void encode(const FieldSource& field, json* out) const override {
    out->update({{"source", "inline"}, {"offset", field.offset}, {"bytes", field.bytes}});
  }

  Status decode(std::string_view, const json& in, FieldSource* field) const override {
    field->delivery = RowDelivery::kRows;
    LIZARD_RETURN_IF_ERROR(read_wire(in, "offset", &field->offset));
    return read_wire(in, "bytes", &field->bytes);
  }

  Result<std::vector<uint8_t>> part_rows(const FieldSource& field,
                                         const PartRows& part) const override {
    if (field.offset + part.offset + part.bytes > part.payload.size())
      return invalid_argument("run_start: inline rows exceed the payload");
    const char* at = part.payload.data() + field.offset + part.offset;
    return std::vector<uint8_t>(at, at + part.bytes);
  }
};

}  // namespace

std::unique_ptr<const DatasetSource> make_inline_source() {
  return std::make_unique<InlineSource>();
}

}  // namespace lizard
