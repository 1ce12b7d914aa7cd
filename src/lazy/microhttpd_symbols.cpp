// SPDX-License-Identifier: Apache-2.0
// The sym_ functions of nps/lazy/microhttpd.hpp: each resolves libmicrohttpd's function
// of the same name on first use (lazy_library.hpp) and forwards to it.
#include <cstdarg>

#include "lazy_library.hpp"
#include "nps/lazy/microhttpd.hpp"

namespace {

nps::lazy::LazyLibrary g_microhttpd("libmicrohttpd.so.12");

}  // namespace

#define NPS_MHD(name) static auto* const real = nps::lazy::resolve<decltype(::name)>(g_microhttpd, #name)

#pragma GCC visibility push(hidden)
// The option list goes through the library's va_list variant.
MHD_Daemon* sym_MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc, void* apc_cls,
                             MHD_AccessHandlerCallback dh, void* dh_cls, ...)
{
    NPS_MHD(MHD_start_daemon_va);
    if (!real)
        return nullptr;
    va_list options;
    va_start(options, dh_cls);
    MHD_Daemon* daemon = real(flags, port, apc, apc_cls, dh, dh_cls, options);
    va_end(options);
    return daemon;
}

void sym_MHD_stop_daemon(MHD_Daemon* daemon)
{
    NPS_MHD(MHD_stop_daemon);
    if (real)
        real(daemon);
}

enum MHD_Result sym_MHD_run(MHD_Daemon* daemon)
{
    NPS_MHD(MHD_run);
    return real ? real(daemon) : MHD_NO;
}

enum MHD_Result sym_MHD_get_timeout(MHD_Daemon* daemon, MHD_UNSIGNED_LONG_LONG* timeout)
{
    NPS_MHD(MHD_get_timeout);
    return real ? real(daemon, timeout) : MHD_NO;
}

// No MHD_DaemonInfoType we ask for reads an argument after `info_type`
// (0.9.75); none is passed on.
const union MHD_DaemonInfo* sym_MHD_get_daemon_info(MHD_Daemon* daemon, enum MHD_DaemonInfoType info_type, ...)
{
    NPS_MHD(MHD_get_daemon_info);
    return real ? real(daemon, info_type) : nullptr;
}

void sym_MHD_suspend_connection(MHD_Connection* connection)
{
    NPS_MHD(MHD_suspend_connection);
    if (real)
        real(connection);
}

void sym_MHD_resume_connection(MHD_Connection* connection)
{
    NPS_MHD(MHD_resume_connection);
    if (real)
        real(connection);
}

// No MHD_ConnectionInfoType reads an argument after `info_type` (0.9.75);
// none is passed on.
const union MHD_ConnectionInfo* sym_MHD_get_connection_info(MHD_Connection* connection,
                                                        enum MHD_ConnectionInfoType info_type, ...)
{
    NPS_MHD(MHD_get_connection_info);
    return real ? real(connection, info_type) : nullptr;
}

const char* sym_MHD_lookup_connection_value(MHD_Connection* connection, enum MHD_ValueKind kind, const char* key)
{
    NPS_MHD(MHD_lookup_connection_value);
    return real ? real(connection, kind, key) : nullptr;
}

int sym_MHD_get_connection_values_n(MHD_Connection* connection, enum MHD_ValueKind kind,
                                MHD_KeyValueIteratorN iterator, void* iterator_cls)
{
    NPS_MHD(MHD_get_connection_values_n);
    return real ? real(connection, kind, iterator, iterator_cls) : -1;
}

MHD_Response* sym_MHD_create_response_from_buffer_with_free_callback_cls(size_t size, void* buffer,
                                                                     MHD_ContentReaderFreeCallback free_callback,
                                                                     void* free_cls)
{
    NPS_MHD(MHD_create_response_from_buffer_with_free_callback_cls);
    return real ? real(size, buffer, free_callback, free_cls) : nullptr;
}

MHD_Response* sym_MHD_create_response_from_callback(uint64_t size, size_t block_size, MHD_ContentReaderCallback crc,
                                                void* crc_cls, MHD_ContentReaderFreeCallback crfc)
{
    NPS_MHD(MHD_create_response_from_callback);
    return real ? real(size, block_size, crc, crc_cls, crfc) : nullptr;
}

enum MHD_Result sym_MHD_add_response_header(MHD_Response* response, const char* header, const char* content)
{
    NPS_MHD(MHD_add_response_header);
    return real ? real(response, header, content) : MHD_NO;
}

enum MHD_Result sym_MHD_queue_response(MHD_Connection* connection, unsigned int status_code, MHD_Response* response)
{
    NPS_MHD(MHD_queue_response);
    return real ? real(connection, status_code, response) : MHD_NO;
}

void sym_MHD_destroy_response(MHD_Response* response)
{
    NPS_MHD(MHD_destroy_response);
    if (real)
        real(response);
}

#pragma GCC visibility pop
