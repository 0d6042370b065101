#include "protocol/messages.h"

#include <utility>

#include "protocol/message_schemas.h"

namespace lizard {

using nlohmann::json;

json HelloMsg::to_json() const {
  return to_header(*this);
}

// The typed messages' encoders and parsers: their schemas' (message_schemas.h).
#define LIZARD_JSON_MESSAGE(M)                                  \
  Result<M> M::parse(const json& h) {                           \
    return from_header<M>(h);                                   \
  }                                                             \
  Message M::to_message() const {                               \
    return Message{WireSchema<M>::kType, to_header(*this), ""}; \
  }
#define LIZARD_JSON_MESSAGE_WITH_PAYLOAD(M)                                     \
  Result<M> M::parse(const json& h) {                                           \
    return from_header<M>(h);                                                   \
  }                                                                             \
  Message M::to_message(std::string payload) const {                            \
    return Message{WireSchema<M>::kType, to_header(*this), std::move(payload)}; \
  }

LIZARD_JSON_MESSAGE(HelloMsg)
LIZARD_JSON_MESSAGE(WelcomeMsg)
LIZARD_JSON_MESSAGE(ProgramMsg)
LIZARD_JSON_MESSAGE(ProgramStatusMsg)
LIZARD_JSON_MESSAGE_WITH_PAYLOAD(RunStartMsg)
LIZARD_JSON_MESSAGE(RunReadyMsg)
LIZARD_JSON_MESSAGE(RunEndMsg)
LIZARD_JSON_MESSAGE_WITH_PAYLOAD(RunOutputsMsg)
LIZARD_JSON_MESSAGE_WITH_PAYLOAD(DataChunkMsg)
LIZARD_JSON_MESSAGE(ProgressMsg)
LIZARD_JSON_MESSAGE(ResourcesMsg)
LIZARD_JSON_MESSAGE(RunAbortMsg)
LIZARD_JSON_MESSAGE_WITH_PAYLOAD(LoopMsg)
LIZARD_JSON_MESSAGE(StageRowsMsg)
LIZARD_JSON_MESSAGE(RowsStagedMsg)
LIZARD_JSON_MESSAGE(ProbeFileMsg)
LIZARD_JSON_MESSAGE(FileProbedMsg)
LIZARD_JSON_MESSAGE(DropRowsMsg)
LIZARD_JSON_MESSAGE(BuildAheadMsg)
LIZARD_JSON_MESSAGE(ProgramRemovedMsg)
LIZARD_JSON_MESSAGE(LogChunkMsg)
LIZARD_JSON_MESSAGE_WITH_PAYLOAD(BuildOfferMsg)
LIZARD_JSON_MESSAGE(BuildFetchMsg)
LIZARD_JSON_MESSAGE_WITH_PAYLOAD(BuildFetchedMsg)

#undef LIZARD_JSON_MESSAGE
#undef LIZARD_JSON_MESSAGE_WITH_PAYLOAD

Status accept_welcome(const WelcomeMsg& w) {
  if (!w.refused.empty()) return permission_denied("the server refused this worker: " + w.refused);
  if (w.protocol != kWireVersion)
    return permission_denied("the server speaks wire protocol version " +
                             std::to_string(w.protocol) + ", this worker version " +
                             std::to_string(kWireVersion));
  return Status::Ok();
}

Status accept_welcome_frame(std::string_view frame) {
  LIZARD_ASSIGN_OR_RETURN(HandshakeFrame h, decode_handshake(frame));
  if (h.type != MessageType::kWelcome) return invalid_argument("not a welcome");
  WelcomeMsg w;
  w.protocol = h.version;
  if (auto r = h.header.find("refused"); r != h.header.end() && r->is_string())
    w.refused = r->get<std::string>();
  return accept_welcome(w);
}

std::string_view run_of_wire_id(std::string_view wire_id) {
  return wire_id.substr(0, wire_id.rfind('.'));
}

std::string wire_run_id_of(MessageType type, const json& header, std::string_view packed) {
  if (has_packed_header(type)) return std::string(packed_run_id(packed));
  auto it = header.find("run_id");
  return it != header.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::string> reported_error(MessageType type, const json& header,
                                          std::string_view packed) {
  auto failed = [](bool ok, std::string error) -> std::optional<std::string> {
    if (ok) return std::nullopt;
    return error.empty() ? "failed" : error;
  };
  switch (type) {
    case MessageType::kIterationResult: {
      auto m = IterationResultMsg::parse(packed);
      return m.ok() ? failed(m->ok, m->error) : m.status().message();
    }
    case MessageType::kLoopStep: {
      auto m = LoopStepMsg::parse(packed);
      return m.ok() ? failed(m->ok, m->error) : m.status().message();
    }
    default: {
      auto ok = header.find("ok");
      if (ok == header.end() || *ok != false) return std::nullopt;
      auto error = header.find("error");
      return failed(false, error != header.end() && error->is_string() ? error->get<std::string>()
                                                                       : std::string());
    }
  }
}

}  // namespace lizard
