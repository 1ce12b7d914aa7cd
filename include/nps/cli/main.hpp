// SPDX-License-Identifier: Apache-2.0
// Entry point of the nps-runner command line: dispatches to the verbs.
#pragma once

namespace nps::cli {

int main(int argc, char** argv);

}  // namespace nps::cli
