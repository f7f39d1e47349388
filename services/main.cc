// rlvr: one binary, one subcommand per role. main only dispatches.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/base/memory_policy.h"
#include "common/base/mutex_policy.h"
#include "services/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int, char**);
};

constexpr Command kCommands[] = {
    {"run", "Embedded default: a learner and N actors on loopback; pretrain, train, evaluate.",
     rlvr::services::RunCommand},
    {"learner", "The learner service: rollout ingest, trainer loop, weight broadcast.",
     rlvr::services::LearnerCommand},
    {"actor", "The actor service: leases prompts, generates scored groups, streams them.",
     rlvr::services::ActorCommand},
    {"pretrain", "Supervised warm start of the base policy on a task's training split.",
     rlvr::services::PretrainCommand},
    {"eval", "Held-out accuracy of a checkpoint: greedy and pass@k.", rlvr::services::EvalCommand},
    {"tokenize", "Token ids of JSONL texts with a Hugging Face tokenizer.json.",
     rlvr::services::TokenizeCommand},
    {"score", "Per-token log-probs and greedy tokens of sequences under a policy (JSONL).",
     rlvr::services::ScoreCommand},
    {"export", "A checkpoint of a Hugging Face model as a Hugging Face directory again.",
     rlvr::services::ExportCommand},
    {"verify", "Rewards of completions (JSONL) under a verifier, with why: the re-scoring tool.",
     rlvr::services::VerifyCommand},
};

void PrintHelp() {
  std::printf(
      "rlvr: distributed actor-learner RL with verifiable rewards (DFPO).\n\n"
      "usage: rlvr <command> [flags]     rlvr <command> --help for its flags\n\ncommands:\n");
  for (const auto& c : kCommands) std::printf("  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    PrintHelp();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    rlvr::KeepFreedMemoryForReuse();  // Before any thread starts.
    rlvr::DisableMutexDeadlockDetection();
    return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "rlvr: unknown command '%s'\n\n", argv[1]);
  PrintHelp();
  return 2;
}
