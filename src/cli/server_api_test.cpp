#include "cli/server_api.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace lizard
