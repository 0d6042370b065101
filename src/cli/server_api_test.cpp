#include "cli/server_api.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>

namespace lizard {
namespace {

TEST(ServerApi, AddressesTakeAPortOrUseTheFlag) {
  EXPECT_EQ(ServerApi::connect("head", 5123, "").value().url("/ruok"), "http://head:5123/ruok");
  EXPECT_EQ(ServerApi::connect("head:6000", 5123, "").value().url("/ruok"),
            "http://head:6000/ruok");
  EXPECT_EQ(ServerApi::connect("http://head:6000/lizard/", 5123, "").value().url("/ruok"),
            "http://head:6000/lizard/ruok");
  EXPECT_EQ(ServerApi::connect("head", 5123, "").value().where(), "head:5123");
  EXPECT_FALSE(ServerApi::connect("", 5000, "").ok());
  EXPECT_FALSE(ServerApi::connect("ftp://head", 5000, "").ok());
}

TEST(ServerApi, TlsComesFromTheSchemeOrTheFlags) {
  EXPECT_EQ(ServerApi::connect("https://head:6000", 5123, "").value().url("/ruok"),
            "https://head:6000/ruok");
  EXPECT_EQ(ServerApi::connect("wss://head", 5123, "").value().url("/ruok"),
            "https://head:5000/ruok");
  EXPECT_EQ(ServerApi::connect("head", 5123, "", {true, ""}).value().url("/ruok"),
            "https://head:5123/ruok");
  EXPECT_EQ(ServerApi::connect("head:6000", 5123, "", {false, "ca.pem"}).value().url("/ruok"),
            "https://head:6000/ruok");  // a CA to trust means TLS
  EXPECT_EQ(ServerApi::connect("http://head:6000", 5123, "", {false, "ca.pem"}).value().url("/"),
            "http://head:6000/");  // the scheme written wins
  auto clash = ServerApi::connect("http://head:6000", 5123, "", {true, ""});
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("--tls"), std::string::npos);
}

TEST(ServerApi, ErrorAnswersCarryTheServersMessage) {
  Status s = status_of_error_answer(404, "{\n  \"error\": \"no such run: r9\"\n}\n");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "no such run: r9");
  s = status_of_error_answer(401,
                             R"({"error": "missing token: send Authorization: Bearer <token>"})");
  EXPECT_EQ(s.message(),
            "missing token: send Authorization: Bearer <token> (give --token or set LIZARD_TOKEN)");
  EXPECT_EQ(status_of_error_answer(409, R"({"error": "run r1 is done already"})").code(),
            Code::kConflict);
  EXPECT_EQ(status_of_error_answer(502, "Bad gateway\n").message(), "Bad gateway");
  EXPECT_EQ(status_of_error_answer(500, "").message(), "HTTP 500");
  auto ok = json_answer(HttpReply{202, R"({"runtime_id": "r1", "status": "queued"})"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->value("runtime_id", ""), "r1");
  EXPECT_FALSE(json_answer(HttpReply{200, "imok"}).ok());
}

TEST(ServerApi, AnAbsentServerIsUnavailableWithAHint) {
  auto api = ServerApi::connect("127.0.0.1", 1, "");  // nothing listens on port 1
  auto r = api->get("/ruok", 5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(r.status().message(),
            "cannot reach 127.0.0.1:1: Connection refused (is `lizard server` running there?)");
}

// A port no one listens on yet: bound, then closed, so that connections to
// it are refused.
uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(ServerApi, AServerThatNeverStartsEndsTheWaitAtItsBoundWithOneNote) {
  auto api = ServerApi::connect("127.0.0.1", free_port(), "");
  std::ostringstream note;
  const auto start = std::chrono::steady_clock::now();
  Status up = api->wait_until_up(0.4, &note);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(up.code(), Code::kUnavailable);
  EXPECT_NE(up.message().find("is `lizard server` running there?"), std::string::npos);
  EXPECT_GE(waited, 0.4);
  EXPECT_LT(waited, 5.0);
  EXPECT_EQ(note.str(),
            "waiting for the server at " + api->where() + " to accept connections (up to 0.4 s)\n");
}

TEST(ServerApi, AServerThatStartsDuringTheWaitIsFound) {
  const uint16_t port = free_port();
  auto api = ServerApi::connect("127.0.0.1", port, "");
  // A listener that answers one request with 200 after 300 ms.
  std::thread late([port] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::listen(fd, 4);
    const int c = ::accept(fd, nullptr, nullptr);
    char buf[4096];
    [[maybe_unused]] ssize_t got = ::read(c, buf, sizeof buf);
    const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nimok";
    [[maybe_unused]] ssize_t sent = ::write(c, answer, sizeof answer - 1);
    ::close(c);
    ::close(fd);
  });
  std::ostringstream note;
  EXPECT_TRUE(api->wait_until_up(10, &note).ok());
  late.join();
  EXPECT_NE(note.str().find("waiting for the server"), std::string::npos);
}

}  // namespace
}  // namespace lizard
