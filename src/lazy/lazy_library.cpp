// SPDX-License-Identifier: Apache-2.0
#include "lazy_library.hpp"

#include <dlfcn.h>

#include <cstdio>

namespace nps::lazy {

void* LazyLibrary::symbol(const char* name)
{
    std::call_once(opened_, [this] {
        // RTLD_LOCAL: the library's symbols must not interpose on ours (we
        // define functions of the same names).
        handle_ = ::dlopen(soname_, RTLD_NOW | RTLD_LOCAL);
        if (!handle_)
            std::fprintf(stderr, "nps-runner: Failed to load '%s': %s\n", soname_, ::dlerror());
    });
    if (!handle_)
        return nullptr;
    void* address = ::dlsym(handle_, name);
    if (!address)
        std::fprintf(stderr, "nps-runner: Failed to find '%s' in '%s': %s\n", name, soname_, ::dlerror());
    return address;
}

}  // namespace nps::lazy
