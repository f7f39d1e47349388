// `rlvr tokenize`: JSONL {"text": ...} in, {"ids": [...], "decoded": ...} out,
// with the tokenizer a run would use (tokenizer.json or a model directory).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/config/flags.h"
#include "common/tokenizer/hf_tokenizer.h"
#include "services/commands.h"

namespace rlvr::services {

int TokenizeCommand(int argc, char** argv) {
  std::string tokenizer_path;
  std::string input = "-";
  bool add_special = false;
  bool skip_special = false;
  FlagSet flags("tokenize",
                "Tokenizes each line {\"text\": ...} of a JSONL file and prints\n"
                "{\"ids\": [...], \"decoded\": ...} per line (ids as Hugging Face's\n"
                "encode(text, add_special_tokens=False) unless --add_special).");
  flags.String("tokenizer", &tokenizer_path, "tokenizer.json, or a directory holding one.");
  flags.String("input", &input, "JSONL input; - reads stdin.");
  flags.Bool("add_special", &add_special, "Prepend BOS when the model adds one (adds_bos()).");
  flags.Bool("skip_special", &skip_special, "Decode without special tokens (as training does).");
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  if (tokenizer_path.empty()) {
    std::fprintf(stderr, "rlvr tokenize: --tokenizer is required\n");
    return 2;
  }
  auto tokenizer = LoadTokenizer(tokenizer_path);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "rlvr tokenize: %s\n", std::string(tokenizer.status().message()).c_str());
    return 1;
  }
  std::ifstream file;
  if (input != "-") {
    file.open(input);
    if (!file) {
      std::fprintf(stderr, "rlvr tokenize: cannot read %s\n", input.c_str());
      return 1;
    }
  }
  std::istream& in = input == "-" ? std::cin : file;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded() || !row.is_object() || !row.contains("text") ||
        !row["text"].is_string()) {
      std::fprintf(stderr, "rlvr tokenize: %s:%d: expected {\"text\": \"...\"}\n", input.c_str(),
                   line_no);
      return 1;
    }
    auto ids = (*tokenizer)->Encode(row["text"].get<std::string>());
    if (!ids.ok()) {
      std::fprintf(stderr, "rlvr tokenize: %s:%d: %s\n", input.c_str(), line_no,
                   std::string(ids.status().message()).c_str());
      return 1;
    }
    if (add_special && (*tokenizer)->adds_bos()) ids->insert(ids->begin(), (*tokenizer)->bos_id());
    nlohmann::json out;
    out["ids"] = *ids;
    out["decoded"] =
        skip_special ? (*tokenizer)->Decode(*ids) : (*tokenizer)->DecodeWithSpecial(*ids);
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return 0;
}

}  // namespace rlvr::services
