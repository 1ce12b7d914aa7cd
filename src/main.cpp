// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/main.hpp"

int main(int argc, char** argv)
{
    return nps::cli::main(argc, argv);
}
