#include "common/tasks/prompt_format.h"

#include <gtest/gtest.h>

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
  } tok;
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

}  // namespace
}  // namespace rlvr
