// UploadReader: the body of an upload of known length, read from its
// connection straight into an UploadPipeline's buffers (server/
// upload_pipeline.h), whose own threads digest and write them: the io
// thread only reads.  The bytes read with the header go first; while every
// buffer is in flight it stops reading until one is free.  Used by
// hub_server.cpp (with upload_body.h for chunked bodies), the only files that
// see Boost.Beast:
//
//   auto reader = std::make_shared<UploadReader<Stream>>(stream, buffer, std::move(sink),
//                                                        length, on_done);
//   reader->start();  // on_done(outcome) on the stream's executor, once
//
// `stream` and `buffer` must outlive it (`on_done` may hold their owner).
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "common/status.h"
#include "server/transport.h"
#include "server/upload_pipeline.h"

namespace lizard {

template <class Stream>
class UploadReader : public std::enable_shared_from_this<UploadReader<Stream>> {
 public:
  struct Outcome {
    boost::beast::error_code ec;  // the connection failed: nothing was stored
    Status status;                // else the sink's verdict (a full disk...)
    bool all_read = false;        // the whole body was read
    std::string path, digest;     // the file, and its digest when stored
    double seconds = 0;           // from the first body byte to the last one stored
  };
  using Done = std::function<void(Outcome)>;

  UploadReader(Stream& stream, boost::beast::flat_buffer& buffer, std::unique_ptr<UploadSink> sink,
               uint64_t length, Done done)
      : stream_(stream),
        buffer_(buffer),
        pipeline_(std::make_unique<UploadPipeline>(std::move(sink))),
        left_(length),
        done_(std::move(done)) {}

  void start() {
    start_ = std::chrono::steady_clock::now();
    span_ = pipeline_->acquire(nullptr);  // all are free at the start
    fill_ = 0;
    const size_t n = std::min<uint64_t>({buffer_.size(), left_, span_.size});
    boost::asio::buffer_copy(boost::asio::buffer(span_.data, n), buffer_.data());
    buffer_.consume(n);
    bytes_read({}, n);
  }

 private:
  void read_more() {
    if (pipeline_->failed() || left_ == 0) return end();
    if (!span_.data) {
      span_ = pipeline_->acquire([self = this->shared_from_this()] {
        boost::asio::post(self->stream_.get_executor(), [self] { self->read_more(); });
      });
      if (!span_.data) return;  // read_more() again once a buffer is free
      fill_ = 0;
    }
    const size_t want = std::min<uint64_t>(span_.size - fill_, left_);
    stream_.async_read_some(
        boost::asio::buffer(span_.data + fill_, want),
        boost::beast::bind_front_handler(&UploadReader::bytes_read, this->shared_from_this()));
  }

  void bytes_read(boost::beast::error_code ec, std::size_t n) {
    if (ec) {  // cut short: the pipeline takes the partial file with it
      pipeline_.reset();
      Outcome o;
      o.ec = ec;
      return done_(std::move(o));
    }
    fill_ += n;
    left_ -= n;
    if (fill_ == span_.size || (left_ == 0 && fill_ > 0)) {
      pipeline_->submit(fill_);
      span_ = {};
      fill_ = 0;
    }
    read_more();
  }

  void end() {
    span_ = {};
    pipeline_->finish([self = this->shared_from_this()](Status st) {
      boost::asio::post(self->stream_.get_executor(), [self, st = std::move(st)]() mutable {
        Outcome o;
        o.status = std::move(st);
        o.all_read = self->left_ == 0;
        o.path = self->pipeline_->path();
        if (o.status.ok()) o.digest = self->pipeline_->digest();
        o.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - self->start_).count();
        self->done_(std::move(o));
      });
    });
  }

  Stream& stream_;
  boost::beast::flat_buffer& buffer_;
  std::unique_ptr<UploadPipeline> pipeline_;
  uint64_t left_;  // body bytes still to come
  UploadPipeline::Span span_;
  size_t fill_ = 0;  // bytes in span_
  Done done_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace lizard
