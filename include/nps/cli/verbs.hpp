// SPDX-License-Identifier: Apache-2.0
// The verbs of the nps-runner command line. Each takes argv with `first`
// pointing after the verb's words and returns the process exit status:
// 0 success, 1 failure (message on stderr), 2 usage error.
#pragma once

namespace nps::cli {

int serve(int argc, char** argv, int first);
int submit(int argc, char** argv, int first);
int task_show(int argc, char** argv, int first);
int task_ls(int argc, char** argv, int first);
int task_watch(int argc, char** argv, int first);
int config_check(int argc, char** argv, int first);
int store_migrate(int argc, char** argv, int first);
int task_logs(int argc, char** argv, int first);
int task_wait(int argc, char** argv, int first);
int task_cancel(int argc, char** argv, int first);
int task_rm(int argc, char** argv, int first);
int task_prune(int argc, char** argv, int first);
int announce(int argc, char** argv, int first);
int ps(int argc, char** argv, int first);
int invoke(int argc, char** argv, int first);
int announce_rm(int argc, char** argv, int first);
int announce_ls(int argc, char** argv, int first);
int announce_resolve(int argc, char** argv, int first);
int run(int argc, char** argv, int first);
int image_import(int argc, char** argv, int first);
int image_pull(int argc, char** argv, int first);
int image_ls(int argc, char** argv, int first);
int image_rm(int argc, char** argv, int first);
int image_gc(int argc, char** argv, int first);
int image_inspect(int argc, char** argv, int first);
int version(int argc, char** argv, int first);
int status(int argc, char** argv, int first);
int ui(int argc, char** argv, int first);

// Exit statuses.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitTimeout = 3;

}  // namespace nps::cli
