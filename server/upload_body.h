// UploadBody: a Boost.Beast body type that hands a request body to an
// UploadSink (server/transport.h) as it arrives, digesting it on the way, so
// that an upload streams to disk and a full disk ends it at the chunk that
// met it.  For chunked bodies; one of known length goes through an
// UploadReader (server/upload_reader.h), which digests on several threads.  Used by
// hub_server.cpp (the only file that sees Beast) for POST /datasets:
//
//   http::request_parser<UploadBody> parser(std::move(header_parser));
//   parser.get().body().sink = std::move(sink);
//   http::async_read(stream, buffer, parser, on_upload);
//   // on_upload: body().failure says why the sink refused bytes, if it did;
//   // else body().digest.hex_digest() is the body's PieceDigest
#pragma once

#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

#include <cstdint>
#include <memory>

#include "common/piece_digest.h"
#include "common/status.h"
#include "server/transport.h"

namespace lizard {

// When the sink refuses bytes (a full disk), the read stops with an error and
// `failure` says why; the request is then answered with it.
struct UploadBody {
  struct value_type {
    std::unique_ptr<UploadSink> sink;
    PieceDigest digest;  // of the bytes the sink took
    Status failure;
    bool finished = false;  // a request without a body never gets a reader
  };

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>&, boost::beast::error_code& ec) { ec = {}; }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      ec = {};
      std::size_t n = 0;
      for (const auto b : boost::beast::buffers_range_ref(buffers)) {
        Status st = body_.sink->write(static_cast<const char*>(b.data()), b.size());
        if (!st.ok()) {
          refuse(std::move(st), ec);
          return n;
        }
        body_.digest.update(b.data(), b.size());
        n += b.size();
      }
      return n;
    }

    void finish(boost::beast::error_code& ec) {
      ec = {};
      body_.finished = true;
      Status st = body_.sink->finish();
      if (!st.ok()) refuse(std::move(st), ec);
    }

   private:
    void refuse(Status st, boost::beast::error_code& ec) {
      body_.failure = std::move(st);
      ec = boost::beast::errc::make_error_code(boost::beast::errc::io_error);
    }
    value_type& body_;
  };
};

}  // namespace lizard
