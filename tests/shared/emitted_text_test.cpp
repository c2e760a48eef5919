// shell_quote and the one-line rule (shared/emitted_text.h): bare words stay bare, everything
// else is single-quoted with ' as '\'' (what bash and shlex read back is checked end to end by
// tests/planner/emit_hostile_test.py); control characters and bytes that are not UTF-8 are
// refused by key.
#include <string>

#include <gtest/gtest.h>

#include "shared/emitted_text.h"
#include "shared/errors.h"

namespace shardcast {
namespace {

TEST(EmittedText, ShellQuoteLeavesSafeWordsAndQuotesTheRest) {
  EXPECT_EQ(shell_quote("--model.flavor=8B"), "--model.flavor=8B");
  EXPECT_EQ(shell_quote("/data/a-b_c.bin"), "/data/a-b_c.bin");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("$(touch X)"), "'$(touch X)'");
  EXPECT_EQ(shell_quote("`x`"), "'`x`'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("back\\slash"), "'back\\slash'");
  EXPECT_EQ(shell_quote("é"), "'é'");
}

TEST(EmittedText, OneLineRefusesControlCharactersAndBadUtf8ByKey) {
  EXPECT_EQ(one_line_problem("plain name ' \" $ ` é \xF0\x9F\x98\x80"), "");
  for (const std::string bad : {std::string("a\nb"), std::string("a\rb"), std::string("a\tb"), std::string("a\0b", 3),
                                std::string("a\x7f"), std::string("\xC3"), std::string("\xC0\x80"),
                                std::string("\xED\xA0\x80")})
    EXPECT_NE(one_line_problem(bad), "") << bad;
  // Line breaks outside ASCII (YAML and Python break at them): NEL, a C1 control, U+2028, U+2029;
  // their neighbours (U+00A0, U+2027, U+202A) are text.
  for (const char* bad : {"m\xC2\x85main_process_ip: 1", "m\xC2\x80", "m\xC2\x9F", "m\xE2\x80\xA8main_process_ip: 1",
                          "m\xE2\x80\xA9"})
    EXPECT_NE(one_line_problem(bad), "") << bad;
  EXPECT_NE(one_line_problem("m\xE2\x80\xA8x").find("U+2028"), std::string::npos) << one_line_problem("m\xE2\x80\xA8x");
  EXPECT_NE(one_line_problem("m\xC2\x85x").find("U+0085"), std::string::npos) << one_line_problem("m\xC2\x85x");
  for (const char* ok : {"m\xC2\xA0x", "m\xE2\x80\xA7x", "m\xE2\x80\xAAx"}) EXPECT_EQ(one_line_problem(ok), "") << ok;
  try {
    require_one_line("run.toml", "checkpoint.dir", "ck\n[job]");
    ADD_FAILURE() << "a newline accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "checkpoint.dir");
    EXPECT_NE(std::string(e.what()).find("control character 0x0a"), std::string::npos) << e.what();
  }
  TrainConfig c;
  c.model.name = "x\ntouch pwned";
  try {
    require_emittable_strings(c, "run.toml");
    ADD_FAILURE() << "a newline in model.name accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "model.name");
  }
  c.model.name = "ok";
  c.data.path = std::string("a\0b", 3);
  EXPECT_THROW(require_emittable_strings(c, "run.toml"), ConfigError);
}

}  // namespace
}  // namespace shardcast
