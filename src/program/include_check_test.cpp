#include "program/include_check.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

std::string refusal(const std::string& text) {
  Status st = check_includes_of("kernel.cu", text);
  return st.ok() ? "" : st.message();
}

TEST(IncludeCheck, AllowsTheProgramsAndTheSystemsHeaders) {
  EXPECT_EQ(refusal("#include \"lizard_program.h\"\n#include <cuda_fp16.h>\n"
                    "  #  include \"sub/helpers.cuh\"\n#include <bits/stdc++.h>\n"
                    "#if __has_include(<cuda_bf16.h>)\n#endif\n#ifdef __has_include\n#endif\n"),
            "");
  EXPECT_EQ(refusal("const char* s = \"#include </etc/passwd>\";\n"), "");
  EXPECT_EQ(refusal("// #include \"/etc/passwd\"\n/* #include \"/etc/passwd\"\n*/\n"), "");
  EXPECT_EQ(refusal("#define X 1 // \"\n#include \"a..b.h\"\n"), "");
}

TEST(IncludeCheck, RefusesAbsolutePathsNamingTheLineAndNotTheContent) {
  const std::string why = refusal("// a kernel\n\n#include \"/etc/passwd\"\n");
  EXPECT_NE(why.find("kernel.cu:3: #include \"/etc/passwd\" is not allowed"), std::string::npos)
      << why;
  EXPECT_NE(why.find("absolute path"), std::string::npos) << why;
  EXPECT_NE(refusal("#include </etc/hostname>\n"), "");
  EXPECT_NE(refusal("#include_next </etc/hostname>\n"), "");
  EXPECT_NE(refusal("#import \"/etc/hostname\"\n"), "");
  EXPECT_NE(refusal("#embed \"/etc/hostname\"\n"), "");
  EXPECT_NE(refusal("#pragma GCC dependency \"/tmp/fifo\"\n"), "");
}

TEST(IncludeCheck, RefusesClimbingOut) {
  EXPECT_NE(refusal("#include \"../secret.h\"\n"), "");
  EXPECT_NE(refusal("#include <sys/../../../etc/passwd>\n"), "");
  EXPECT_NE(refusal("#include \"sub/..\"\n"), "");
  EXPECT_NE(refusal("#include \"a\\\\b.h\"\n"), "");
}

TEST(IncludeCheck, SeesDirectivesThePreprocessorSees) {
  // A line splice, a comment between # and include, the digraph %:.
  EXPECT_NE(refusal("#inc\\\nlude \"/etc/passwd\"\n"), "");
  EXPECT_NE(refusal("#/* x */include \"/etc/passwd\"\n"), "");
  EXPECT_NE(refusal("%:include \"/etc/passwd\"\n"), "");
  EXPECT_NE(refusal("x = 1; /* a\n b */ #include \"/etc/passwd\"\n"), "") << "refused either way";
  // A raw string that holds a comment marker does not hide what follows.
  EXPECT_NE(refusal("auto s = R\"x( \" /* )x\";\n#include \"/etc/passwd\"\n// */\n"), "");
  // A // comment that a splice continues hides nothing of the next line but itself.
  EXPECT_EQ(refusal("// x \\\n#include \"/etc/passwd\"\n"), "");
  const std::string why = refusal("\n#inc\\\nlude \\\n\"/etc/passwd\"\n");
  EXPECT_NE(why.find("kernel.cu:2:"), std::string::npos) << why;
}

TEST(IncludeCheck, RefusesNamesMadeByMacros) {
  const std::string why = refusal("#define F \"/etc/passwd\"\n#include F\n");
  EXPECT_NE(why.find("kernel.cu:2: #include of a name made by a macro"), std::string::npos) << why;
  EXPECT_NE(refusal("#if __has_include(F)\n#endif\n"), "");
  EXPECT_NE(refusal("#if __has_include(\"/etc/passwd\")\n#endif\n"), "");
}

TEST(IncludeCheck, ChecksEveryFile) {
  EXPECT_TRUE(check_includes({{"kernel.cu", "#include \"h.cuh\"\n"}, {"h.cuh", ""}}).ok());
  Status st = check_includes(
      {{"kernel.cu", "#include \"h.cuh\"\n"}, {"h.cuh", "#include \"/proc/self/environ\"\n"}});
  EXPECT_EQ(st.code(), Code::kCompileError);
  EXPECT_NE(st.message().find("h.cuh:1:"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace lizard
