// The subcommands of the `rlvr` CLI. Each parses its own flags into Options,
// wires the libraries and runs; it returns the process exit code.
#ifndef RLVR_SERVICES_COMMANDS_H_
#define RLVR_SERVICES_COMMANDS_H_

namespace rlvr::services {

// argv[0] is the subcommand name; flags follow.
int LearnerCommand(int argc, char** argv);
int ActorCommand(int argc, char** argv);
int RunCommand(int argc, char** argv);
int PretrainCommand(int argc, char** argv);
int EvalCommand(int argc, char** argv);
int TokenizeCommand(int argc, char** argv);
int ScoreCommand(int argc, char** argv);
int ExportCommand(int argc, char** argv);
int VerifyCommand(int argc, char** argv);

}  // namespace rlvr::services

#endif  // RLVR_SERVICES_COMMANDS_H_
