#include "common/config/config_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace rlvr {
namespace {

using ::testing::HasSubstr;

struct Toy {
  int layers = 2;
  double lr = 0.1;
  bool flag = false;
  std::string mode = "a";
  std::string name = "x";
  std::vector<int> ids = {1, 2};
  int64_t seed = 5;
};

void Describe(Toy* t, ConfigSchema* s) {
  s->Int("model.layers", &t->layers, 1, 10, "layers");
  s->Double("optim.lr", &t->lr, 0.0, 1.0, "lr");
  s->Bool("optim.flag", &t->flag, "flag");
  s->Enum("loss.mode", &t->mode, {"a", "b"}, "mode");
  s->String("run.name", &t->name, "name");
  s->IntList("run.ids", &t->ids, 0, 9, "ids");
  s->Int64("run.seed", &t->seed, 0, 1000000, "seed");
}

TEST(ConfigSchemaTest, AppliesNestedYamlAndKeepsDefaults) {
  Toy t;
  ConfigSchema s;
  Describe(&t, &s);
  ASSERT_TRUE(
      s.ApplyYaml("model:\n  layers: 4\noptim:\n  flag: true\nrun:\n  ids: [3, 4]\n", "toy.yaml")
          .ok());
  EXPECT_EQ(t.layers, 4);
  EXPECT_TRUE(t.flag);
  EXPECT_DOUBLE_EQ(t.lr, 0.1);
  EXPECT_EQ(t.ids, (std::vector<int>{3, 4}));
}

// A renamed key: the old name still sets the field (YAML and --set), the
// new one is what ToYaml writes, and both in one document is an error.
TEST(ConfigSchemaTest, RenamedKeyStillWorksButNotTwice) {
  Toy t;
  ConfigSchema s;
  Describe(&t, &s);
  s.Renamed("optim.layers", "model.layers");
  ASSERT_TRUE(s.ApplyYaml("optim:\n  layers: 7\n", "toy.yaml").ok());
  EXPECT_EQ(t.layers, 7);
  ASSERT_TRUE(s.ApplyOverride("optim.layers=3").ok());
  EXPECT_EQ(t.layers, 3);
  EXPECT_THAT(s.ToYaml(), HasSubstr("layers: 3"));
  EXPECT_THAT(s.ToYaml(), ::testing::Not(HasSubstr("optim:\n  layers")));
  absl::Status both = s.ApplyYaml("model:\n  layers: 4\noptim:\n  layers: 5\n", "toy.yaml");
  EXPECT_FALSE(both.ok());
  EXPECT_THAT(std::string(both.message()), HasSubstr("set twice"));
}

TEST(ConfigSchemaTest, UnknownKeyNamesThePath) {
  Toy t;
  ConfigSchema s;
  Describe(&t, &s);
  absl::Status st = s.ApplyYaml("model:\n  layerz: 4\n", "toy.yaml");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("model.layerz"));
  EXPECT_THAT(st.message(), HasSubstr("unknown key"));
  EXPECT_THAT(st.message(), HasSubstr("toy.yaml"));
  EXPECT_THAT(s.ApplyYaml("bogus: 1\n", "t").message(), HasSubstr("'bogus': unknown key"));
}

TEST(ConfigSchemaTest, WrongTypeNamesPathAndExpectedType) {
  Toy t;
  ConfigSchema s;
  Describe(&t, &s);
  absl::Status st = s.ApplyYaml("model:\n  layers: four\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("model.layers"));
  EXPECT_THAT(st.message(), HasSubstr("expected an integer"));
  st = s.ApplyYaml("optim:\n  flag: maybe\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("optim.flag"));
  EXPECT_THAT(st.message(), HasSubstr("boolean"));
  st = s.ApplyYaml("loss:\n  mode: c\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("loss.mode"));
  EXPECT_THAT(st.message(), HasSubstr("one of {a, b}"));
  st = s.ApplyYaml("model: 3\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("'model': is a section"));
  st = s.ApplyYaml("model:\n  layers:\n    deep: 1\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("model.layers"));
  EXPECT_THAT(st.message(), HasSubstr("got a mapping"));
  st = s.ApplyYaml("model:\n  layers: 2.5\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("model.layers"));
  st = s.ApplyYaml("model:\n  layers: [1]\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("got 'a list'"));
}

TEST(ConfigSchemaTest, OutOfRangeNamesPathAndRange) {
  Toy t;
  ConfigSchema s;
  Describe(&t, &s);
  absl::Status st = s.ApplyYaml("model:\n  layers: 11\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("model.layers"));
  EXPECT_THAT(st.message(), HasSubstr("out of range"));
  EXPECT_THAT(st.message(), HasSubstr("[1, 10]"));
  st = s.ApplyYaml("optim:\n  lr: -0.5\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("optim.lr"));
  EXPECT_THAT(st.message(), HasSubstr("out of range"));
  st = s.ApplyYaml("run:\n  ids: [1, 12]\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("run.ids"));
  st = s.ApplyYaml("optim:\n  lr: .nan\n", "t");
  EXPECT_THAT(st.message(), HasSubstr("optim.lr"));
}

TEST(ConfigSchemaTest, SyntaxErrorNamesLine) {
  Toy t;
  ConfigSchema s;
  Describe(&t, &s);
  absl::Status st = s.ApplyYaml("model:\n  layers: [1\n", "bad.yaml");
  EXPECT_THAT(st.message(), HasSubstr("bad.yaml"));
  EXPECT_THAT(st.message(), HasSubstr("line"));
}

TEST(ConfigSchemaTest, OverridesAreCheckedTheSameWay) {
  Toy t;
  ConfigSchema s;
  Describe(&t, &s);
  EXPECT_TRUE(s.ApplyOverride("optim.lr=0.5").ok());
  EXPECT_DOUBLE_EQ(t.lr, 0.5);
  EXPECT_TRUE(s.ApplyOverride("run.ids=[7,8]").ok());
  EXPECT_EQ(t.ids, (std::vector<int>{7, 8}));
  EXPECT_THAT(s.ApplyOverride("optim.lrr=1").message(), HasSubstr("optim.lrr"));
  EXPECT_THAT(s.ApplyOverride("model.layers=0").message(), HasSubstr("out of range"));
  EXPECT_THAT(s.ApplyOverride("nonsense").message(), HasSubstr("key.path=value"));
}

TEST(ConfigSchemaTest, ToYamlRoundTrips) {
  Toy t;
  t.layers = 7;
  t.lr = 0.123456789;
  t.mode = "b";
  t.name = "with: colon";
  t.ids = {};
  ConfigSchema s;
  Describe(&t, &s);
  std::string yaml = s.ToYaml();
  Toy u;
  ConfigSchema s2;
  Describe(&u, &s2);
  ASSERT_TRUE(s2.ApplyYaml(yaml, "roundtrip").ok()) << yaml;
  EXPECT_EQ(u.layers, 7);
  EXPECT_DOUBLE_EQ(u.lr, 0.123456789);
  EXPECT_EQ(u.mode, "b");
  EXPECT_EQ(u.name, "with: colon");
  EXPECT_TRUE(u.ids.empty());
}

}  // namespace
}  // namespace rlvr
