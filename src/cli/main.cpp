// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/main.hpp"

namespace nps::cli {

int main(int, char**)
{
    return 0;
}

}  // namespace nps::cli
