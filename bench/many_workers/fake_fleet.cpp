// FakeFleet's workers: dialling, the WebSocket upgrade, and the answers to
// the server's messages.
#include "fake_fleet.h"

#include <boost/asio.hpp>

#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/executor.h"
#include "net/ws_channel_open.h"
#include "protocol/messages.h"

namespace lizard {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

struct Counter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t n) { v.fetch_add(n, std::memory_order_relaxed); }
  uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

HelloMsg fake_hello(int index) {
  HelloMsg h;
  h.hostname = "fake-" + std::to_string(index);
  h.version = LIZARD_VERSION;
  h.backend = "cpu";
  h.cpu.model = "fake";
  h.cpu.threads = 1;
  ExecutorInfo e;
  e.kind = "cpu";
  e.name = "fake";
  e.sm_count = 1;
  e.total_memory = e.free_memory = uint64_t{1} << 30;
  h.executors.push_back(e);
  return h;
}

}  // namespace

struct FakeFleet::Impl : std::enable_shared_from_this<FakeFleet::Impl> {
  std::string host;
  uint16_t port = 0;
  FleetShape shape;
  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  std::vector<std::thread> threads;
  std::mutex mu;  // guards channels and aggregate
  std::vector<std::shared_ptr<WsChannel>> channels;
  std::shared_ptr<const std::string> aggregate = std::make_shared<std::string>();
  std::atomic<int> open{0}, next_index{0};
  Counter iterates, iterate_bytes, results, result_bytes, frames_in, bytes_in, frames_out,
      bytes_out, programs, failures;
  // The fold tree (shape.fold), under `mu`: each worker's channel by the id
  // its welcome gave, its place in the current run, and the aggregate as a
  // sender covering n workers sends it, by n.
  std::map<std::string, std::weak_ptr<WsChannel>> by_id;
  std::map<std::string, FoldPlace> places;
  std::map<int64_t, std::shared_ptr<const std::string>> covering;

  void send(WsChannel& ch, OutgoingFrame f) {
    frames_out.add(1);
    bytes_out.add(f.size());
    ch.send(std::move(f));
  }

  void dial(int index) {
    auto socket = std::make_shared<tcp::socket>(net::make_strand(ioc));
    const tcp::endpoint at(net::ip::make_address(host), port);
    if (shape.workers_per_host > 0) {  // a loopback address of its own host
      const int h = index / shape.workers_per_host;
      const net::ip::address_v4 from(net::ip::address_v4::bytes_type{
          127, 1, static_cast<unsigned char>(h / 256), static_cast<unsigned char>(h % 256)});
      boost::system::error_code ec;
      socket->open(tcp::v4(), ec);
      if (!ec) socket->bind(tcp::endpoint(from, 0), ec);
      if (ec) {
        failures.add(1);
        return;
      }
    }
    socket->async_connect(at,
                          [self = shared_from_this(), socket, index](boost::system::error_code ec) {
                            if (ec) {
                              self->failures.add(1);
                              return;
                            }
                            socket->set_option(tcp::no_delay(true), ec);
                            self->upgrade(MaybeTlsStream(std::move(*socket)), index);
                          });
  }

  void upgrade(MaybeTlsStream stream, int index) {
    WsChannelOptions opts;
    opts.idle_timeout_s = 60;  // the bench's io threads may be busy for a while
    auto self = shared_from_this();
    handshake_ws_channel(
        std::move(stream), host + ":" + std::to_string(port), "/hub", {}, opts,
        [self, index](const std::shared_ptr<WsChannel>& ch) { return self->on_open(ch, index); },
        [self](const WsOpenFailure&) { self->failures.add(1); });
  }

  WsChannelCallbacks on_open(const std::shared_ptr<WsChannel>& ch, int index) {
    {
      std::lock_guard<std::mutex> l(mu);
      channels.push_back(ch);
    }
    open.fetch_add(1);
    HelloMsg hello = fake_hello(index);
    if (shape.fold) hello.fold_port = 9;  // said, never dialled: the fold is simulated
    send(*ch, encode(hello.to_message()));
    std::weak_ptr<WsChannel> weak = ch;
    auto self = shared_from_this();
    auto id = std::make_shared<std::string>();  // from its welcome; on the channel's strand
    return {[self, weak, id](std::string frame) {
              if (auto c = weak.lock()) self->on_frame(*c, weak, id.get(), frame);
            },
            [self](const std::string&) {
              self->open.fetch_sub(1);
              self->failures.add(1);
            }};
  }

  void on_frame(WsChannel& ch, const std::weak_ptr<WsChannel>& weak, std::string* id,
                const std::string& frame) {
    frames_in.add(1);
    bytes_in.add(frame.size());
    auto view = decode_view(frame);
    if (!view.ok()) return;
    switch (view->type) {
      case MessageType::kWelcome: {
        *id = view->header.value("worker_id", "");
        std::lock_guard<std::mutex> l(mu);
        by_id[*id] = weak;
        return;
      }
      case MessageType::kProgram: {
        programs.add(1);
        ProgramStatusMsg st{view->header.value("hash", ""), true, ""};
        return send(ch, encode(st.to_message()));
      }
      case MessageType::kRunStart: {
        if (shape.fold) {
          auto start = RunStartMsg::parse(view->header);
          std::lock_guard<std::mutex> l(mu);
          places[*id] = start.ok() ? start->fold : FoldPlace{};
        }
        RunReadyMsg ready;
        ready.run_id = view->header.value("run_id", "");
        ready.compile_cache_hit = true;
        return send(ch, encode(ready.to_message()));
      }
      case MessageType::kIterate: {
        iterates.add(1);
        iterate_bytes.add(frame.size());
        auto it = IterateMsg::parse(view->packed);
        if (!it.ok()) return;
        std::shared_ptr<WsChannel> to;
        int64_t workers = 1;
        std::shared_ptr<const std::string> agg;
        {
          std::lock_guard<std::mutex> l(mu);
          if (!tree_sender(*id, &to, &workers)) return;  // its sender answers for it
          agg = covering_aggregate(workers);
        }
        IterationResultMsg r{it->run_id, it->iteration, true, "", 0.0};
        r.workers = workers;
        std::string head;
        r.encode_into(&head, nullptr, 0);
        OutgoingFrame out(std::move(head), *agg, agg);
        results.add(1);
        result_bytes.add(out.size());
        return send(to ? *to : ch, std::move(out));
      }
      default:
        return;  // run_end (no outputs are asked for), run_abort
    }
  }

  // Under `mu`.  Whether worker `id` answers its iterate, and for how many
  // workers: itself in a star; in a tree, a sender for its subtree (the
  // server sends the iterate to the senders only, and they would pass it
  // down), while a worker below another answers nothing.
  bool tree_sender(const std::string& id, std::shared_ptr<WsChannel>* to, int64_t* workers) {
    auto place = places.find(id);
    if (place == places.end() || place->second.empty()) return true;
    if (!place->second.parent_id.empty()) return false;
    *to = by_id[id].lock();
    *workers = place->second.workers;
    return *to != nullptr;
  }

  // Under `mu`: the aggregate summed over `workers` workers (each sends ones).
  std::shared_ptr<const std::string> covering_aggregate(int64_t workers) {
    if (workers == 1) return aggregate;
    auto& a = covering[workers];
    if (!a) {
      std::vector<float> v(aggregate->size() / 4);
      std::memcpy(v.data(), aggregate->data(), v.size() * 4);
      for (float& x : v) x *= static_cast<float>(workers);
      a = std::make_shared<const std::string>(reinterpret_cast<const char*>(v.data()),
                                              v.size() * 4);
    }
    return a;
  }
};

FakeFleet::FakeFleet(std::string host, uint16_t port, int io_threads, FleetShape shape)
    : impl_(std::make_shared<Impl>()) {
  impl_->host = std::move(host);
  impl_->port = port;
  impl_->shape = shape;
  for (int i = 0; i < io_threads; ++i)
    impl_->threads.emplace_back([impl = impl_] { impl->ioc.run(); });
}

FakeFleet::~FakeFleet() {
  std::vector<std::shared_ptr<WsChannel>> channels;
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    channels.swap(impl_->channels);
  }
  for (auto& ch : channels) ch->abort();
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
}

void FakeFleet::set_aggregate(std::string aggregate) {
  auto a = std::make_shared<const std::string>(std::move(aggregate));
  std::lock_guard<std::mutex> l(impl_->mu);
  impl_->aggregate = std::move(a);
  impl_->covering.clear();
}

void FakeFleet::connect(int n) {
  for (int i = 0; i < n; ++i) impl_->dial(impl_->next_index.fetch_add(1));
}

int FakeFleet::open() const {
  return impl_->open.load();
}

FleetCounters FakeFleet::counters() const {
  const Impl& m = *impl_;
  return {m.iterates.get(),  m.iterate_bytes.get(), m.results.get(),    m.result_bytes.get(),
          m.frames_in.get(), m.bytes_in.get(),      m.frames_out.get(), m.bytes_out.get(),
          m.programs.get(),  m.failures.get()};
}

}  // namespace lizard
