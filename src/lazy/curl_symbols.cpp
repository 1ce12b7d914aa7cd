// SPDX-License-Identifier: Apache-2.0
// The sym_ functions of nps/lazy/curl.hpp: each resolves libcurl's function
// of the same name on first use (lazy_library.hpp) and forwards to it.
#include <cstdarg>

#include "lazy_library.hpp"
#include "nps/lazy/curl.hpp"

namespace {

nps::lazy::LazyLibrary g_curl("libcurl.so.4");

}  // namespace

#define NPS_CURL(name) static auto* const real = nps::lazy::resolve<decltype(::name)>(g_curl, #name)

#pragma GCC visibility push(hidden)
CURLcode sym_curl_global_init(long flags)
{
    NPS_CURL(curl_global_init);
    return real ? real(flags) : CURLE_FAILED_INIT;
}

CURL* sym_curl_easy_init(void)
{
    NPS_CURL(curl_easy_init);
    return real ? real() : nullptr;
}

// The one argument after `option` has the type the option's number range
// gives it (CURLOPTTYPE_*), as libcurl itself reads it.
CURLcode sym_curl_easy_setopt(CURL* curl, CURLoption option, ...)
{
    NPS_CURL(curl_easy_setopt);
    if (!real)
        return CURLE_FAILED_INIT;
    va_list args;
    va_start(args, option);
    CURLcode result;
    if (option < CURLOPTTYPE_OBJECTPOINT) {
        result = real(curl, option, va_arg(args, long));
    } else if (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB) {
        result = real(curl, option, va_arg(args, curl_off_t));
    } else if (option >= CURLOPTTYPE_FUNCTIONPOINT && option < CURLOPTTYPE_OFF_T) {
        result = real(curl, option, va_arg(args, void (*)()));
    } else {
        result = real(curl, option, va_arg(args, void*));
    }
    va_end(args);
    return result;
}

// Every CURLINFO takes one pointer.
CURLcode sym_curl_easy_getinfo(CURL* curl, CURLINFO info, ...)
{
    NPS_CURL(curl_easy_getinfo);
    if (!real)
        return CURLE_FAILED_INIT;
    va_list args;
    va_start(args, info);
    void* out = va_arg(args, void*);
    va_end(args);
    return real(curl, info, out);
}

CURLcode sym_curl_easy_perform(CURL* curl)
{
    NPS_CURL(curl_easy_perform);
    return real ? real(curl) : CURLE_FAILED_INIT;
}

void sym_curl_easy_cleanup(CURL* curl)
{
    NPS_CURL(curl_easy_cleanup);
    if (real)
        real(curl);
}

const char* sym_curl_easy_strerror(CURLcode code)
{
    NPS_CURL(curl_easy_strerror);
    return real ? real(code) : "libcurl could not be loaded";
}

curl_slist* sym_curl_slist_append(curl_slist* list, const char* text)
{
    NPS_CURL(curl_slist_append);
    return real ? real(list, text) : nullptr;
}

void sym_curl_slist_free_all(curl_slist* list)
{
    NPS_CURL(curl_slist_free_all);
    if (real)
        real(list);
}

CURLU* sym_curl_url(void)
{
    NPS_CURL(curl_url);
    return real ? real() : nullptr;
}

void sym_curl_url_cleanup(CURLU* url)
{
    NPS_CURL(curl_url_cleanup);
    if (real)
        real(url);
}

CURLUcode sym_curl_url_get(CURLU* url, CURLUPart what, char** part, unsigned int flags)
{
    NPS_CURL(curl_url_get);
    return real ? real(url, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

CURLUcode sym_curl_url_set(CURLU* url, CURLUPart what, const char* part, unsigned int flags)
{
    NPS_CURL(curl_url_set);
    return real ? real(url, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

void sym_curl_free(void* p)
{
    NPS_CURL(curl_free);
    if (real)
        real(p);
}

CURLM* sym_curl_multi_init(void)
{
    NPS_CURL(curl_multi_init);
    return real ? real() : nullptr;
}

CURLMcode sym_curl_multi_cleanup(CURLM* multi)
{
    NPS_CURL(curl_multi_cleanup);
    return real ? real(multi) : CURLM_INTERNAL_ERROR;
}

// As curl_easy_setopt: the argument's type follows the option's number range.
CURLMcode sym_curl_multi_setopt(CURLM* multi, CURLMoption option, ...)
{
    NPS_CURL(curl_multi_setopt);
    if (!real)
        return CURLM_INTERNAL_ERROR;
    va_list args;
    va_start(args, option);
    CURLMcode result;
    if (option < CURLOPTTYPE_OBJECTPOINT) {
        result = real(multi, option, va_arg(args, long));
    } else if (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB) {
        result = real(multi, option, va_arg(args, curl_off_t));
    } else if (option >= CURLOPTTYPE_FUNCTIONPOINT && option < CURLOPTTYPE_OFF_T) {
        result = real(multi, option, va_arg(args, void (*)()));
    } else {
        result = real(multi, option, va_arg(args, void*));
    }
    va_end(args);
    return result;
}

CURLMcode sym_curl_multi_add_handle(CURLM* multi, CURL* easy)
{
    NPS_CURL(curl_multi_add_handle);
    return real ? real(multi, easy) : CURLM_INTERNAL_ERROR;
}

CURLMcode sym_curl_multi_remove_handle(CURLM* multi, CURL* easy)
{
    NPS_CURL(curl_multi_remove_handle);
    return real ? real(multi, easy) : CURLM_INTERNAL_ERROR;
}

CURLMcode sym_curl_multi_socket_action(CURLM* multi, curl_socket_t fd, int events, int* running)
{
    NPS_CURL(curl_multi_socket_action);
    return real ? real(multi, fd, events, running) : CURLM_INTERNAL_ERROR;
}

CURLMsg* sym_curl_multi_info_read(CURLM* multi, int* left)
{
    NPS_CURL(curl_multi_info_read);
    return real ? real(multi, left) : nullptr;
}

const char* sym_curl_multi_strerror(CURLMcode code)
{
    NPS_CURL(curl_multi_strerror);
    return real ? real(code) : "libcurl could not be loaded";
}

#pragma GCC visibility pop
