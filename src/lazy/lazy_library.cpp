// SPDX-License-Identifier: Apache-2.0
#include "lazy_library.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <string>

namespace nps::lazy {

namespace {

std::string dl_error()
{
    const char* why = ::dlerror();
    return why ? why : "unknown error";
}

// The lowest layer has no logger (nps/base/log.hpp is above it): one line on
// stderr, in the text format of log::error.
void report(const std::string& message)
{
    const std::string line = "nps-runner: error: " + message + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

void* LazyLibrary::symbol(const char* name)
{
    std::call_once(opened_, [this] {
        // RTLD_LOCAL: the library's symbols stay out of the global scope,
        // where they could satisfy another object's undefined references.
        handle_ = ::dlopen(soname_, RTLD_NOW | RTLD_LOCAL);
        if (!handle_)
            report(std::string("Failed to load '") + soname_ + "': " + dl_error());
    });
    if (!handle_)
        return nullptr;
    void* address = ::dlsym(handle_, name);
    if (!address)
        report(std::string("Failed to find '") + name + "' in '" + soname_ + "': " + dl_error());
    return address;
}

}  // namespace nps::lazy
