#include "common/config/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace rlvr {
namespace {

using ::testing::HasSubstr;

TEST(FlagsTest, ParsesAllForms) {
  std::string addr = "a";
  int port = 1;
  double x = 0;
  bool v = false, w = true;
  std::vector<std::string> sets;
  FlagSet f("test", "A test.");
  f.String("addr", &addr, "address");
  f.Int("port", &port, "port");
  f.Double("x", &x, "x");
  f.Bool("v", &v, "v");
  f.Bool("w", &w, "w");
  f.StringList("set", &sets, "overrides");
  std::vector<std::string> args = {"--addr=b", "--port", "42",  "--x=0.5",   "--v",
                                   "--now",    "--set",  "a=1", "--set=b=2", "pos"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ASSERT_TRUE(f.Parse(argv.size(), argv.data()).ok());
  EXPECT_EQ(addr, "b");
  EXPECT_EQ(port, 42);
  EXPECT_DOUBLE_EQ(x, 0.5);
  EXPECT_TRUE(v);
  EXPECT_FALSE(w);
  EXPECT_EQ(sets, (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_EQ(f.positional(), (std::vector<std::string>{"pos"}));
  EXPECT_THAT(f.Usage(), HasSubstr("--port (default 1)"));
}

TEST(FlagsTest, RejectsUnknownAndBadValues) {
  int port = 1;
  FlagSet f("test", "A test.");
  f.Int("port", &port, "port");
  std::vector<std::string> a1 = {"--prot=3"};
  std::vector<char*> v1 = {a1[0].data()};
  EXPECT_THAT(f.Parse(1, v1.data()).message(), HasSubstr("unknown flag --prot"));
  std::vector<std::string> a2 = {"--port=x3"};
  std::vector<char*> v2 = {a2[0].data()};
  EXPECT_THAT(f.Parse(1, v2.data()).message(), HasSubstr("--port: expected an integer"));
  std::vector<std::string> a3 = {"--port"};
  std::vector<char*> v3 = {a3[0].data()};
  EXPECT_THAT(f.Parse(1, v3.data()).message(), HasSubstr("needs a value"));
}

}  // namespace
}  // namespace rlvr
