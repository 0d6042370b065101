#include "protocol/wire.h"

#include <string_view>

#include <cstring>

namespace lizard {

namespace {

// What LIZARD_MESSAGE_TYPES says of one message type.
struct MessageTypeInfo {
  MessageType type;
  const char* name;
  const char* direction;
  const char* payload;
};

constexpr MessageTypeInfo kMessageTypes[] = {
#define LIZARD_MESSAGE_INFO(e, n, name, direction, payload) \
  {MessageType::e, name, direction, payload},
    LIZARD_MESSAGE_TYPES(LIZARD_MESSAGE_INFO)
#undef LIZARD_MESSAGE_INFO
};

const MessageTypeInfo* info_of(MessageType t) {
  for (const MessageTypeInfo& info : kMessageTypes)
    if (info.type == t) return &info;
  return nullptr;
}

}  // namespace

const char* message_type_name(MessageType t) {
  const MessageTypeInfo* info = info_of(t);
  return info ? info->name : "unknown";
}

const char* message_direction(MessageType t) {
  const MessageTypeInfo* info = info_of(t);
  return info ? info->direction : "";
}

const char* message_payload(MessageType t) {
  const MessageTypeInfo* info = info_of(t);
  return info ? info->payload : "";
}

bool has_packed_header(MessageType t) {
  return t == MessageType::kIterate || t == MessageType::kIterationResult ||
         t == MessageType::kLoopStep;
}

std::string encode(const Message& m) {
  const std::string_view payload = m.payload;
  return encode(m, &payload, 1);
}

std::string encode(const Message& m, const std::string_view* parts, size_t count) {
  const bool packed = has_packed_header(m.type);
  const std::string dumped = packed ? std::string() : m.header.dump();
  const std::string& header = packed ? m.packed : dumped;
  const uint32_t n = static_cast<uint32_t>(header.size());
  size_t payload_bytes = 0;
  for (size_t i = 0; i < count; ++i) payload_bytes += parts[i].size();
  std::string out;
  out.reserve(8 + header.size() + payload_bytes);
  out.push_back('L');
  out.push_back('Z');
  out.push_back(static_cast<char>(kWireVersion));
  out.push_back(static_cast<char>(m.type));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += header;
  for (size_t i = 0; i < count; ++i) out += parts[i];
  return out;
}

size_t begin_packed_frame(MessageType type, std::string* frame) {
  const char head[8] = {'L', 'Z', static_cast<char>(kWireVersion), static_cast<char>(type)};
  frame->assign(head, sizeof head);
  return sizeof head;
}

void finish_packed_frame(size_t header_start, const std::string_view* parts, size_t count,
                         std::string* frame) {
  const auto n = static_cast<uint32_t>(frame->size() - header_start);
  for (int i = 0; i < 4; ++i) (*frame)[4 + i] = static_cast<char>((n >> (8 * i)) & 0xff);
  for (size_t i = 0; i < count; ++i) frame->append(parts[i]);
}

Result<MessageType> frame_type(std::string_view frame) {
  if (frame.size() < 8 || frame[0] != 'L' || frame[1] != 'Z')
    return invalid_argument("not a lizard frame");
  if (static_cast<uint8_t>(frame[2]) != kWireVersion)
    return invalid_argument("wire version " + std::to_string(static_cast<uint8_t>(frame[2])) +
                            " (this build speaks " + std::to_string(kWireVersion) + ")");
  const uint8_t type = static_cast<uint8_t>(frame[3]);
  if (std::string_view(message_type_name(static_cast<MessageType>(type))) == "unknown")
    return invalid_argument("unknown message type " + std::to_string(type));
  return static_cast<MessageType>(type);
}

Result<MessageView> decode_view(std::string_view frame) {
  LIZARD_ASSIGN_OR_RETURN(const MessageType type, frame_type(frame));
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= uint32_t(static_cast<uint8_t>(frame[4 + i])) << (8 * i);
  if (n > frame.size() - 8) return invalid_argument("frame header length exceeds the frame");
  MessageView m;
  m.type = type;
  if (has_packed_header(m.type)) {
    m.packed = frame.substr(8, n);  // its typed message checks it (iteration_messages.h)
  } else {
    m.header = nlohmann::json::parse(frame.substr(8, n), nullptr, /*allow_exceptions=*/false);
    if (!m.header.is_object()) return invalid_argument("frame header is not a JSON object");
  }
  m.payload = frame.substr(8 + n);
  return m;
}

Result<HandshakeFrame> decode_handshake(std::string_view frame) {
  if (frame.size() < 8 || frame[0] != 'L' || frame[1] != 'Z')
    return invalid_argument("not a lizard frame");
  HandshakeFrame h;
  h.version = static_cast<uint8_t>(frame[2]);
  h.type = static_cast<MessageType>(frame[3]);
  if (h.type != MessageType::kHello && h.type != MessageType::kWelcome)
    return invalid_argument("not a hello or welcome frame");
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= uint32_t(static_cast<uint8_t>(frame[4 + i])) << (8 * i);
  if (n > frame.size() - 8) return invalid_argument("frame header length exceeds the frame");
  h.header = nlohmann::json::parse(frame.substr(8, n), nullptr, /*allow_exceptions=*/false);
  if (!h.header.is_object()) return invalid_argument("frame header is not a JSON object");
  return h;
}

Result<Message> decode(std::string_view frame) {
  LIZARD_ASSIGN_OR_RETURN(MessageView v, decode_view(frame));
  return Message{v.type, std::move(v.header), std::string(v.payload), std::string(v.packed)};
}

}  // namespace lizard
