// SharedTailBody: a Beast HTTP body made of a string and then bytes that lie
// elsewhere, kept alive by an owner (a run's output field as the record
// holds it), written to the socket from where they are: a field of any size
// is downloaded without being copied into a response first.
//
//   http::response<SharedTailBody> res{http::status::ok, 11};
//   res.body() = {npy_header, field_bytes, owner};
//   res.prepare_payload();                       // Content-Length: both parts
//   http::async_write(stream, res, ...);
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace lizard {

struct SharedTailBody {
  struct value_type {
    std::string head;
    std::string_view tail;
    std::shared_ptr<const void> owner;  // keeps `tail` alive
  };

  static std::uint64_t size(const value_type& v) { return v.head.size() + v.tail.size(); }

  // Serialises both parts in one go: the serializer keeps the buffers until
  // they are written, however many writes that takes.
  class writer {
   public:
    using const_buffers_type = std::array<boost::asio::const_buffer, 2>;

    template <bool isRequest, class Fields>
    writer(const boost::beast::http::header<isRequest, Fields>&, const value_type& v) : v_(v) {}

    void init(boost::beast::error_code& ec) { ec = {}; }

    boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& ec) {
      ec = {};
      if (done_) return boost::none;
      done_ = true;
      return std::make_pair(const_buffers_type{boost::asio::buffer(v_.head),
                                               boost::asio::buffer(v_.tail.data(), v_.tail.size())},
                            false);
    }

   private:
    const value_type& v_;
    bool done_ = false;
  };
};

}  // namespace lizard
