#include "common/tasks/prompt_format.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/tasks/task.h"
#include "common/testing/special_tokenizer.h"

namespace rlvr {
namespace {

using testing::SpecialTokenizer;

// The sample conversation of scripts/render-chat-templates and the texts
// Jinja rendered from Qwen3's and Llama-3's chat templates for it.
constexpr char kSystem[] = "You are a careful math tutor.";
constexpr char kQuestion[] = "  What is 2+3?\nShow your work.  ";
constexpr char kQwen3WithSystem[] =
    "<|im_start|>system\nYou are a careful math tutor.<|im_end|>\n<|im_start|>user\n  What is "
    "2+3?\nShow your work.  <|im_end|>\n<|im_start|>assistant\n";
constexpr char kQwen3NoSystem[] =
    "<|im_start|>user\n  What is 2+3?\nShow your work.  <|im_end|>\n<|im_start|>assistant\n";
constexpr char kLlama3WithSystem[] =
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a careful math "
    "tutor.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+3?\nShow your "
    "work.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
constexpr char kLlama3NoSystem[] =
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+3?\nShow your "
    "work.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";

SpecialTokenizer QwenLike() {
  return SpecialTokenizer({"<|im_start|>", "<|im_end|>", "<|endoftext|>"}, /*has_bos=*/false);
}
SpecialTokenizer LlamaLike() {
  return SpecialTokenizer(
      {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"},
      /*has_bos=*/true);
}

// A tokenizer whose BOS is the special token <|begin_of_text|>, as Llama-3's.
class BosIsSpecial final : public Tokenizer {
 public:
  int vocab_size() const override { return inner_.vocab_size(); }
  int bos_id() const override { return *inner_.TokenId("<|begin_of_text|>"); }
  int eos_id() const override { return inner_.eos_id(); }
  int pad_id() const override { return inner_.pad_id(); }
  absl::StatusOr<std::vector<int>> Encode(absl::string_view t) const override {
    return inner_.Encode(t);
  }
  std::string Decode(const std::vector<int>& ids) const override { return inner_.Decode(ids); }
  std::optional<int> TokenId(absl::string_view t) const override { return inner_.TokenId(t); }
  std::string DecodeWithSpecial(const std::vector<int>& ids) const override {
    return inner_.DecodeWithSpecial(ids);
  }

 private:
  SpecialTokenizer inner_ = LlamaLike();
};

TEST(PromptFormatTest, RawIsTheQuestion) {
  auto tok = MakeCharTokenizer();
  auto f = PromptFormat::Create("raw", "", *tok);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->kind(), "raw");
  EXPECT_EQ(f->Render("12+34="), "12+34=");
  EXPECT_EQ(f->stop_ids(), std::vector<int>{tok->eos_id()});
  EXPECT_FALSE(PromptFormat::Create("raw", "be nice", *tok).ok());
}

TEST(PromptFormatTest, ChatmlMatchesQwen3Template) {
  SpecialTokenizer tok = QwenLike();
  auto with_system = PromptFormat::Create("chatml", kSystem, tok);
  ASSERT_TRUE(with_system.ok()) << with_system.status();
  EXPECT_EQ(with_system->Render(kQuestion), kQwen3WithSystem);
  auto without = PromptFormat::Create("chatml", "", tok);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->Render(kQuestion), kQwen3NoSystem);
  // EOS then <|im_end|>.
  EXPECT_EQ(without->stop_ids(), (std::vector<int>{tok.eos_id(), *tok.TokenId("<|im_end|>")}));
  // The encoded prompt: special tokens are single ids, no BOS (Qwen has none).
  auto ids = EncodePrompt(tok, without->Render("hi"));
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->front(), *tok.TokenId("<|im_start|>"));
  EXPECT_EQ(ids->size(),
            1 + 5 + 2 + 1 + 1 + 1 + 10);  // im_start user\n hi im_end \n im_start assistant\n
}

TEST(PromptFormatTest, Llama3MatchesLlama3Template) {
  SpecialTokenizer tok = LlamaLike();
  auto with_system = PromptFormat::Create("llama3", kSystem, tok);
  ASSERT_TRUE(with_system.ok()) << with_system.status();
  EXPECT_EQ(with_system->Render(kQuestion), kLlama3WithSystem);
  auto without = PromptFormat::Create("llama3", "", tok);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->Render(kQuestion), kLlama3NoSystem);
  EXPECT_EQ(without->stop_ids(), (std::vector<int>{tok.eos_id(), *tok.TokenId("<|eot_id|>")}));
  // <|begin_of_text|> is written by the format: EncodePrompt adds no second BOS
  // (here the tokenizer's BOS id is the char tokenizer's, so it is prepended
  // once before <|begin_of_text|>; with the real Llama-3 tokenizer they are
  // the same id and nothing is added).
  auto ids = EncodePrompt(tok, without->Render("hi"));
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ((*ids)[0], tok.bos_id());
  EXPECT_EQ((*ids)[1], *tok.TokenId("<|begin_of_text|>"));
}

TEST(PromptFormatTest, EncodePromptAddsBosOnlyOnce) {
  BosIsSpecial tok;
  auto f = PromptFormat::Create("llama3", "", tok);
  ASSERT_TRUE(f.ok()) << f.status();
  auto ids = EncodePrompt(tok, f->Render("hi"));
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ((*ids)[0], tok.bos_id());
  EXPECT_NE((*ids)[1], tok.bos_id());
  auto raw = EncodePrompt(tok, "hi");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->size(), 3u);  // BOS h i
}

TEST(PromptFormatTest, Templates) {
  auto tok = MakeCharTokenizer();
  auto f = PromptFormat::Create("Question: {question}\nAnswer:", "", *tok);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->kind(), "template");
  EXPECT_EQ(f->Render("2+2?"), "Question: 2+2?\nAnswer:");
  // One pass: placeholders inside the question stay as written.
  EXPECT_EQ(f->Render("say {question} {system}"), "Question: say {question} {system}\nAnswer:");
  auto sys = PromptFormat::Create("{system}\n\nQ: {question}\nA:", "Be brief.", *tok);
  ASSERT_TRUE(sys.ok()) << sys.status();
  EXPECT_EQ(sys->Render("1+1"), "Be brief.\n\nQ: 1+1\nA:");
  // A system prompt needs a {system} slot.
  EXPECT_FALSE(PromptFormat::Create("Q: {question}", "Be brief.", *tok).ok());
  // Special tokens in a template: fine with a tokenizer that has them.
  SpecialTokenizer qwen = QwenLike();
  auto nothink = PromptFormat::Create(
      "<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", "",
      qwen);
  ASSERT_TRUE(nothink.ok()) << nothink.status();
  EXPECT_EQ(nothink->stop_ids(), std::vector<int>{qwen.eos_id()});
}

TEST(PromptFormatTest, ErrorsNameTheFormat) {
  auto tok = MakeCharTokenizer();
  for (const char* format : {"chatml", "llama3"}) {
    auto f = PromptFormat::Create(format, "", *tok);
    ASSERT_FALSE(f.ok()) << format;
    EXPECT_NE(f.status().message().find(format), absl::string_view::npos) << f.status();
    EXPECT_NE(f.status().message().find("<|"), absl::string_view::npos) << f.status();
  }
  auto special_template = PromptFormat::Create("<|im_start|>{question}", "", *tok);
  ASSERT_FALSE(special_template.ok());
  EXPECT_NE(special_template.status().message().find("<|im_start|>"), absl::string_view::npos);
  auto unknown = PromptFormat::Create("chatml2", "", *tok);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown format 'chatml2'"), absl::string_view::npos)
      << unknown.status();
  // The llama3 format needs all four of its markers.
  SpecialTokenizer partial({"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}, true);
  auto missing = PromptFormat::Create("llama3", "", partial);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("<|begin_of_text|>"), absl::string_view::npos);
}

TEST(ChatTemplateTest, UnknownTemplatesAreReported) {
  SpecialTokenizer qwen = QwenLike();
  auto chatml = PromptFormat::Create("chatml", "", qwen);
  ASSERT_TRUE(chatml.ok());
  auto w =
      CheckChatTemplate("{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}", *chatml);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("unknown chat template"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("ChatML"), std::string::npos) << w[0];
  w = CheckChatTemplate("{{ '<|start_header_id|>' }}", *chatml);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[1].find("does not use the markers of chatml"), std::string::npos) << w[1];
  // raw and templates are not checked.
  auto raw = PromptFormat::Create("raw", "", qwen);
  ASSERT_TRUE(raw.ok());
  EXPECT_TRUE(CheckChatTemplate("anything", *raw).empty());
}

TEST(ChatTemplateTest, ModelDirectory) {
  SpecialTokenizer qwen = QwenLike();
  auto chatml = PromptFormat::Create("chatml", "", qwen);
  ASSERT_TRUE(chatml.ok());
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "rlvr_prompt_format_model";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "tokenizer_config.json");
  auto none = CheckModelChatTemplate(dir.string(), *chatml);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  std::ofstream(dir / "tokenizer_config.json") << "{\"chat_template\": \"<|im_start|>x\"}";
  auto one = CheckModelChatTemplate(dir.string(), *chatml);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->size(), 1u);
  std::ofstream(dir / "tokenizer_config.json") << "{not json";
  EXPECT_FALSE(CheckModelChatTemplate(dir.string(), *chatml).ok());
}

namespace model_format {

namespace fs = std::filesystem;

// A model directory holding `config` as tokenizer_config.json (and
// `jinja`, when not empty, as chat_template.jinja).
std::string ModelDir(const std::string& name, const std::string& config,
                     const std::string& jinja = "") {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json") << config;
  if (!jinja.empty()) std::ofstream(dir / "chat_template.jinja") << jinja;
  return dir.string();
}

// A self-written template in the style of Llama-3's: BOS written by the
// template, trimmed contents, a thinking switch.
constexpr char kLlamaStyleConfig[] = R"({
  "bos_token": {"content": "<|begin_of_text|>", "lstrip": false},
  "eos_token": "<|eot_id|>",
  "chat_template": "{{- bos_token }}{%- for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content | trim }}<|eot_id|>{%- endfor %}{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% if enable_thinking is defined and not enable_thinking %}(no thinking){% endif %}{%- endif %}"
})";

TEST(ModelPromptFormatTest, RendersTheModelsTemplate) {
  BosIsSpecial tok;
  const std::string dir = ModelDir("rlvr_model_format_llama", kLlamaStyleConfig);
  auto f = PromptFormat::CreateFromModel(dir, " Be brief. ", "", tok);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->kind(), "model");
  EXPECT_EQ(f->Render("  What is 2+3?\n"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe "
            "brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is "
            "2+3?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  // The template writes BOS: EncodePrompt does not add a second one.
  EXPECT_TRUE(f->writes_bos());
  auto ids = EncodePrompt(tok, f->Render("hi"));
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(std::count(ids->begin(), ids->end(), *tok.TokenId("<|begin_of_text|>")), 1);
  // The end-of-turn marker the template writes stops a completion.
  EXPECT_EQ(f->stop_ids(), (std::vector<int>{tok.eos_id(), *tok.TokenId("<|eot_id|>")}));
  // Extra template variables.
  auto no_think = PromptFormat::CreateFromModel(dir, "", "enable_thinking=false", tok);
  ASSERT_TRUE(no_think.ok()) << no_think.status();
  EXPECT_EQ(no_think->Render("hi"),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_"
            "header_id|>assistant<|end_header_id|>\n\n(no thinking)");
  // Built-in formats are not checked against a model format.
  EXPECT_TRUE(CheckChatTemplate("{{ anything }}", *f).empty());
}

TEST(ModelPromptFormatTest, TemplateSources) {
  SpecialTokenizer tok = QwenLike();
  // A list of named templates: "default" is used.
  const std::string list = ModelDir("rlvr_model_format_list", R"({"chat_template": [
      {"name": "tool_use", "template": "TOOLS"},
      {"name": "default", "template": "{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}"}]})");
  auto f = PromptFormat::CreateFromModel(list, "", "", tok);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->Render("q"), "<|im_start|>q<|im_end|>");
  // chat_template.jinja takes precedence over tokenizer_config.json.
  const std::string jinja = ModelDir("rlvr_model_format_jinja", R"({"chat_template": "old"})",
                                     "new {{ messages[0].content }}\n");
  f = PromptFormat::CreateFromModel(jinja, "", "", tok);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->Render("q"), "new q");
}

TEST(ModelPromptFormatTest, Errors) {
  SpecialTokenizer tok = QwenLike();
  // No template: a base model.
  auto none = PromptFormat::CreateFromModel(ModelDir("rlvr_model_format_none", "{}"), "", "", tok);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("has no chat template"), absl::string_view::npos)
      << none.status();
  // A template that does not parse names its file, line and column.
  const std::string bad = ModelDir("rlvr_model_format_bad", R"({"chat_template": "ok\n{% if %}"})");
  auto syntax = PromptFormat::CreateFromModel(bad, "", "", tok);
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(
      syntax.status().message().find("tokenizer_config.json: chat template: line 2, column 7"),
      absl::string_view::npos)
      << syntax.status();
  // A template that refuses the conversation fails at startup.
  const std::string raising = ModelDir(
      "rlvr_model_format_raise",
      R"({"chat_template": "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}x"})");
  EXPECT_TRUE(PromptFormat::CreateFromModel(raising, "", "", tok).ok());
  auto refused = PromptFormat::CreateFromModel(raising, "sys", "", tok);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("System role not supported"), absl::string_view::npos);
  // Bad kwargs name the config key.
  auto kwargs = PromptFormat::CreateFromModel(raising, "", "enable_thinking", tok);
  ASSERT_FALSE(kwargs.ok());
  EXPECT_NE(kwargs.status().message().find("task.chat_template_kwargs"), absl::string_view::npos);
  // No model directory.
  auto no_dir = PromptFormat::CreateFromModel("", "", "", tok);
  ASSERT_FALSE(no_dir.ok());
  EXPECT_NE(no_dir.status().message().find("model.hf_path"), absl::string_view::npos);
}

TEST(ModelPromptFormatTest, MakeTaskRendersPrompts) {
  SpecialTokenizer tok = QwenLike();
  // Qwen2.5's habit: a default system prompt when none is given.
  const std::string dir = ModelDir("rlvr_model_format_task", R"({"eos_token": "<|im_end|>",
    "chat_template": "{%- if messages[0].role != 'system' %}<|im_start|>system\nDefault.<|im_end|>\n{% endif %}{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"})");
  const fs::path data = fs::path(::testing::TempDir()) / "rlvr_model_format_task.jsonl";
  std::ofstream(data) << "{\"question\": \"1+1?\", \"answer\": \"2\"}\n";
  TaskConfig c;
  c.kind = "jsonl";
  c.train_path = data.string();
  c.prompt_format = "model";
  TaskOptions options;
  options.model_dir = dir;
  auto task = MakeTask(c, tok, options);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->train()[0].text,
            "<|im_start|>system\nDefault.<|im_end|>\n<|im_start|>user\n1+1?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ((*task)->stop_ids(), (std::vector<int>{tok.eos_id(), *tok.TokenId("<|im_end|>")}));
  // A process that only verifies needs no template.
  TaskOptions verify_only;
  verify_only.load_prompts = false;
  EXPECT_TRUE(MakeTask(c, tok, verify_only).ok());
  // Without the model directory prompts cannot be rendered.
  auto no_dir = MakeTask(c, tok, TaskOptions{});
  ASSERT_FALSE(no_dir.ok());
  EXPECT_NE(no_dir.status().message().find("model.hf_path"), absl::string_view::npos);
  // chat_template_kwargs belongs to the model format.
  c.prompt_format = "chatml";
  c.chat_template_kwargs = "enable_thinking=false";
  auto misplaced = MakeTask(c, tok, options);
  ASSERT_FALSE(misplaced.ok());
  EXPECT_NE(misplaced.status().message().find("task.chat_template_kwargs"),
            absl::string_view::npos);
}

}  // namespace model_format

}  // namespace
}  // namespace rlvr
