#include "client/fold_links.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "protocol/iteration_messages.h"

namespace lizard {
namespace {

using std::chrono::milliseconds;

std::string result_frame(int64_t iteration, const std::string& payload) {
  IterationResultMsg r;
  r.run_id = "r1.0";
  r.iteration = iteration;
  return encode(r.to_message(payload));
}

FoldLinks::Options plain(const std::string& token) {
  FoldLinks::Options o;
  o.host = "127.0.0.1";
  o.token = token;
  return o;
}

std::string payload_of(const std::string& frame) {
  auto view = decode_view(frame);
  return view.ok() ? std::string(view->payload) : "";
}

TEST(FoldInbox, GivesTheChildrensResultsInTheirOrderWhateverOrderTheyCameIn) {
  FoldInbox in;
  in.put("w3", result_frame(0, "c"));
  in.put("w2", result_frame(1, "later"));
  in.put("w2", result_frame(0, "b"));
  std::vector<std::string> frames;
  ASSERT_TRUE(in.take(0, {"w2", "w3"}, milliseconds(1000), nullptr, &frames).ok());
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(payload_of(frames[0]), "b");
  EXPECT_EQ(payload_of(frames[1]), "c");
  in.put("w3", result_frame(1, "c1"));
  ASSERT_TRUE(in.take(1, {"w2", "w3"}, milliseconds(1000), nullptr, &frames).ok());
  EXPECT_EQ(payload_of(frames[0]), "later");
}

TEST(FoldInbox, AChildThatSendsNothingFailsTheTakeNamingIt) {
  FoldInbox in;
  in.put("w2", result_frame(4, "b"));
  std::vector<std::string> frames;
  const auto t0 = std::chrono::steady_clock::now();
  Status st = in.take(4, {"w2", "w3"}, milliseconds(200), nullptr, &frames);
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_NE(st.message().find("worker w3"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("sent nothing in iteration 4"), std::string::npos) << st.message();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(200));
}

TEST(FoldInbox, AChildWhoseLinkEndedFailsTheTakeAfterTheGraceNotTheWholeWait) {
  FoldInbox in;
  in.closed("w3");
  std::vector<std::string> frames;
  const auto t0 = std::chrono::steady_clock::now();
  Status st = in.take(0, {"w3"}, std::chrono::seconds(60), nullptr, &frames);
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_NE(st.message().find("lost its link"), std::string::npos) << st.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(FoldInbox, AnInterruptOrACloseEndsATakeAtOnce) {
  FoldInbox in;
  std::vector<std::string> frames;
  Status st = in.take(
      0, {"w2"}, std::chrono::seconds(60), [] { return true; }, &frames);
  EXPECT_EQ(st.code(), Code::kCancelled);
  std::thread closer([&] {
    std::this_thread::sleep_for(milliseconds(100));
    in.close();
  });
  st = in.take(0, {"w2"}, std::chrono::seconds(60), nullptr, &frames);
  closer.join();
  EXPECT_EQ(st.code(), Code::kCancelled);
}

TEST(FoldLinks, AChildWithTheTokenDeliversItsResultsAndOneWithoutIsRefused) {
  auto parent = FoldLinks::start(plain("s3cret"));
  ASSERT_TRUE(parent.ok()) << parent.status().message();
  const std::string address = "127.0.0.1:" + std::to_string((*parent)->port());
  auto stranger = FoldLinks::start(plain("wrong"));
  ASSERT_TRUE(stranger.ok());
  auto refused = (*stranger)->dial(address, "r1.0", "w9", milliseconds(3000));
  EXPECT_FALSE(refused.ok());
  auto child = FoldLinks::start(plain("s3cret"));
  ASSERT_TRUE(child.ok());
  auto up = (*child)->dial(address, "r1.0", "w7", milliseconds(3000));
  ASSERT_TRUE(up.ok()) << up.status().message();
  (*up)->send(OutgoingFrame(result_frame(0, "from w7")));
  std::vector<std::string> frames;
  Status st = (*parent)->inbox("r1.0")->take(0, {"w7"}, milliseconds(5000), nullptr, &frames);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(payload_of(frames[0]), "from w7");
  // Nothing reached the run from the worker that was refused.
  EXPECT_FALSE((*parent)->inbox("r1.0")->take(0, {"w9"}, milliseconds(100), nullptr, &frames).ok());
  (*parent)->forget("r1.0");
}

TEST(FoldInbox, AChildWhoseLinkOpensAgainIsWaitedForAgain) {
  FoldInbox in;
  in.closed("w3");
  in.opened("w3");
  std::thread sender([&] {
    std::this_thread::sleep_for(milliseconds(FoldInbox::kLinkGraceMs + 500));
    in.put("w3", result_frame(0, "late but there"));
  });
  std::vector<std::string> frames;
  Status st = in.take(0, {"w3"}, std::chrono::seconds(60), nullptr, &frames);
  sender.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(payload_of(frames[0]), "late but there");
}

TEST(FoldLinks, ASessionStartedAgainGetsTheFramesOfLinksOpenedBeforeIt) {
  std::promise<std::string> down;  // before the links, whose io threads set it
  std::once_flag first_down;
  auto parent = FoldLinks::start(plain(""));
  auto child = FoldLinks::start(plain(""));
  ASSERT_TRUE(parent.ok() && child.ok());
  const std::string address = "127.0.0.1:" + std::to_string((*parent)->port());
  auto first = (*parent)->inbox("r1.0");
  auto up = (*child)->dial(address, "r1.0", "w7", milliseconds(3000), [&](std::string f) {
    std::call_once(first_down, [&] { down.set_value(std::move(f)); });
  });
  ASSERT_TRUE(up.ok()) << up.status().message();
  // A repeated run_start: the session goes and a new one takes the run.
  (*parent)->forget("r1.0");
  auto second = (*parent)->inbox("r1.0");
  EXPECT_NE(first, second);
  // The state still goes down the link the child opened before.
  auto state = std::make_shared<const std::string>("iterate frame");
  ASSERT_TRUE((*parent)->send_down("r1.0", {"w7"}, state, milliseconds(2000)).ok());
  auto got = down.get_future();
  ASSERT_EQ(got.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(got.get(), "iterate frame");
  Status none = (*parent)->send_down("r1.0", {"w7", "w8"}, state, milliseconds(200));
  EXPECT_EQ(none.code(), Code::kUnavailable);
  EXPECT_NE(none.message().find("worker w8"), std::string::npos) << none.message();
  (*up)->send(OutgoingFrame(result_frame(0, "to the new session")));
  std::vector<std::string> frames;
  Status st = second->take(0, {"w7"}, milliseconds(5000), nullptr, &frames);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(payload_of(frames[0]), "to the new session");
  // Once the run is over, what still comes for it is kept for no one.
  (*parent)->forget("r1.0");
  (*up)->send(OutgoingFrame(result_frame(1, "too late")));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE((*parent)->inbox("r1.0")->take(1, {"w7"}, milliseconds(100), nullptr, &frames).ok());
}

TEST(FoldLinks, TlsNeedsTheCertificateItsKeyAndTlsTogether) {
  FoldLinks::Options half = plain("");
  half.tls_cert_file = "cert.pem";  // no key, no TLS to the others
  EXPECT_EQ(FoldLinks::start(half).status().code(), Code::kInvalidArgument);
  FoldLinks::Options no_cert = plain("");
  no_cert.tls.enabled = true;
  EXPECT_EQ(FoldLinks::start(no_cert).status().code(), Code::kInvalidArgument);
  FoldLinks::Options unreadable = no_cert;
  unreadable.tls_cert_file = "/no/such/cert.pem";
  unreadable.tls_key_file = "/no/such/key.pem";
  auto st = FoldLinks::start(unreadable).status();
  EXPECT_NE(st.message().find("/no/such/cert.pem"), std::string::npos) << st.message();
}

TEST(FoldLinks, ADialToAPortNobodyListensOnFailsWithinItsTimeout) {
  auto links = FoldLinks::start(plain(""));
  ASSERT_TRUE(links.ok());
  auto other = FoldLinks::start(plain(""));
  ASSERT_TRUE(other.ok());
  const std::string address = "127.0.0.1:" + std::to_string((*other)->port());
  other->reset();  // its port closes
  const auto t0 = std::chrono::steady_clock::now();
  auto up = (*links)->dial(address, "r1.0", "w2", milliseconds(2000));
  EXPECT_FALSE(up.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  EXPECT_FALSE((*links)->dial("not-an-address", "r1.0", "w2", milliseconds(100)).ok());
  EXPECT_FALSE((*links)->dial("127.0.0.1:port", "r1.0", "w2", milliseconds(100)).ok());
  EXPECT_FALSE((*links)->dial("127.0.0.1:99999", "r1.0", "w2", milliseconds(100)).ok());
}

}  // namespace
}  // namespace lizard
