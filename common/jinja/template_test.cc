// The engine's own contracts: error positions, sandbox limits, the injected
// clock, the context, and concurrent renders. Jinja2 conformance is
// reference_test.cc.
#include "common/jinja/template.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "common/jinja/chat_template.h"
#include "common/jinja/value.h"

namespace rlvr::jinja {
namespace {

using nlohmann::ordered_json;

absl::StatusOr<std::string> Render(const std::string& source,
                                   const ordered_json& context = ordered_json::object(),
                                   const RenderOptions& options = {}) {
  auto t = Template::Parse(source);
  if (!t.ok()) return t.status();
  return (*t)->Render(context, options);
}

TEST(JinjaTemplateTest, SyntaxErrorsNameLineAndColumn) {
  auto r = Render("line one\n  {{ 1 + }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(r.status().message(), "line 2, column 10:")) << r.status();
  r = Render("{% if x %}\n{% for %}");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StartsWith(r.status().message(), "line 2, column 8:")) << r.status();
  r = Render("{% include 'other.jinja' %}");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "'include' tag is not supported"));
}

TEST(JinjaTemplateTest, RenderErrorsNameLineAndColumn) {
  auto r = Render("ok\n{{ 'x' | nope }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "line 2, column 10: no filter named 'nope'");
  r = Render("{{ user.name }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "line 1, column 8: 'user' is undefined");
  r = Render("\n\n  {{ raise_exception('bad roles') }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "line 3, column 6: raise_exception: bad roles");
  // An error inside a macro is reported where it happened.
  r = Render("{% macro m() %}\n{{ 1 // 0 }}{% endmacro %}{{ m() }}");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StartsWith(r.status().message(), "line 2,")) << r.status();
}

TEST(JinjaTemplateTest, LimitsStopRunawayTemplates) {
  RenderOptions small;
  small.max_output_bytes = 100;
  small.max_loop_iterations = 50;
  small.max_call_depth = 8;
  auto r = Render("{% for i in range(40) %}xxxxx{% endfor %}", ordered_json::object(), small);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  r = Render("{% for i in range(30) %}{% for j in range(30) %}{% endfor %}{% endfor %}",
             ordered_json::object(), small);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  r = Render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", ordered_json::object(),
             small);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  r = Render("{{ 'ab' * 1000 }}", ordered_json::object(), small);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  r = Render("{{ range(1000000)|length }}");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  r = Render("{{ 2 ** 70 }}");
  EXPECT_FALSE(r.ok());  // int64 overflow is an error, not a wrong number.
}

TEST(JinjaTemplateTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep(100000, '(');
  EXPECT_FALSE(Render("{{ " + deep + " }}").ok());
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  EXPECT_FALSE(Render(chain + " }}").ok());
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(Render(ifs).ok());
  std::string nots = "{{ ";
  for (int i = 0; i < 100000; ++i) nots += "not ";
  EXPECT_FALSE(Render(nots + "1 }}").ok());
}

TEST(JinjaTemplateTest, ClockIsInjected) {
  RenderOptions options;
  options.time_zone = absl::FixedTimeZone(2 * 3600);
  options.now = [] { return absl::FromUnixSeconds(0); };
  auto r = Render("{{ strftime_now('%d %b %Y %H:%M') }}", ordered_json::object(), options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, "01 Jan 1970 02:00");
}

TEST(JinjaTemplateTest, NewlinesAsJinjaReadsThem) {
  // "\r\n" and "\r" are newlines, and one trailing newline is dropped.
  auto r = Render("a\r\nb\rc\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "a\nb\nc");
}

TEST(JinjaTemplateTest, ContextMustBeAnObject) {
  auto t = Template::Parse("x");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE((*t)->Render(ordered_json::array()).ok());
  // Key order of the context's objects is kept (tojson, items).
  auto r = Render("{{ d|tojson }}", ordered_json::parse(R"({"d": {"z": 1, "a": 2}})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, R"({"z": 1, "a": 2})");
}

TEST(JinjaTemplateTest, ConcurrentRendersOfOneTemplate) {
  auto t = Template::Parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "{{ m.content }}{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  std::vector<std::thread> threads;
  std::vector<std::string> out(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      ordered_json ctx;
      ctx["messages"] = ordered_json::array();
      for (int k = 0; k <= i; ++k) ctx["messages"].push_back({{"content", "x"}});
      for (int rep = 0; rep < 200; ++rep) out[i] = *(*t)->Render(ctx);
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], std::string(i + 1, 'x') + std::to_string(i + 1));
}

TEST(JinjaValueTest, PythonFloatRepr) {
  EXPECT_EQ(FormatFloat(1.0), "1.0");
  EXPECT_EQ(FormatFloat(0.1), "0.1");
  EXPECT_EQ(FormatFloat(1e16), "1e+16");
  EXPECT_EQ(FormatFloat(123456789012345.6), "123456789012345.6");
  EXPECT_EQ(FormatFloat(1e-5), "1e-05");
  EXPECT_EQ(FormatFloat(0.0001), "0.0001");
  EXPECT_EQ(FormatFloat(-2.5), "-2.5");
  EXPECT_EQ(FormatFloat(1.5e300), "1.5e+300");
}

TEST(ChatTemplateTest, SpecialTokensAndKwargs) {
  auto chat = ChatTemplate::FromSource(
      "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}"
      "{% if enable_thinking is defined and not enable_thinking %}[no-think]{% endif %}"
      "{{ tools is none }}",
      {{"bos_token", "<s>"}}, "test");
  ASSERT_TRUE(chat.ok()) << chat.status();
  const ordered_json messages = ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  auto r = (*chat)->Apply(messages, true, ordered_json::object());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, "<s><user>hi<assistant>True");
  r = (*chat)->Apply(messages, false, ordered_json::parse(R"({"enable_thinking": false})"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, "<s><user>hi[no-think]True");
  EXPECT_EQ((*chat)->special_token("bos_token"), "<s>");
  EXPECT_EQ((*chat)->special_token("eos_token"), "");
}

TEST(ChatTemplateTest, ParsesKwargs) {
  auto kw = ParseTemplateKwargs(
      "enable_thinking=false, n = 3, date_string=26 Jul 2024, q='a,b', l=[1, \"x,y\"], "
      "o={\"k\": null}");
  ASSERT_TRUE(kw.ok()) << kw.status();
  EXPECT_EQ(kw->dump(),
            R"({"enable_thinking":false,"n":3,"date_string":"26 Jul 2024","q":"a,b","l":[1,"x,y"],)"
            R"("o":{"k":null}})");
  EXPECT_TRUE(ParseTemplateKwargs("")->empty());
  EXPECT_FALSE(ParseTemplateKwargs("enable_thinking").ok());
  EXPECT_FALSE(ParseTemplateKwargs("1x=2").ok());
  EXPECT_FALSE(ParseTemplateKwargs("a=1, a=2").ok());
}

TEST(ChatTemplateTest, ErrorsNameTheOrigin) {
  auto chat = ChatTemplate::FromSource("{% if %}", {}, "model/tokenizer_config.json");
  ASSERT_FALSE(chat.ok());
  EXPECT_TRUE(absl::StartsWith(chat.status().message(),
                               "model/tokenizer_config.json: chat template: line 1, column 7"))
      << chat.status();
  auto missing = ChatTemplate::FromModelDir("/nonexistent/model");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "has no chat template"));
}

}  // namespace
}  // namespace rlvr::jinja
