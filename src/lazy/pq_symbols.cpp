// SPDX-License-Identifier: Apache-2.0
// The libpq functions nps-runner calls, loaded on first use (see
// lazy_library.hpp): only a daemon whose store is PostgreSQL loads libpq and
// its dependencies. A function missing here shows up as an undefined symbol
// when linking nps-runner: add it here.
#include <libpq-fe.h>

#include "lazy_library.hpp"

namespace {

nps::lazy::LazyLibrary g_pq("libpq.so.5");

}  // namespace

#define NPS_PQ(name) static auto* const real = nps::lazy::resolve<decltype(::name)>(g_pq, #name)

#pragma GCC visibility push(hidden)
extern "C" {

// nullptr: the caller reports that libpq could not be loaded.
PGconn* PQconnectdb(const char* conninfo)
{
    NPS_PQ(PQconnectdb);
    return real ? real(conninfo) : nullptr;
}

void PQfinish(PGconn* conn)
{
    NPS_PQ(PQfinish);
    if (real)
        real(conn);
}

ConnStatusType PQstatus(const PGconn* conn)
{
    NPS_PQ(PQstatus);
    return real ? real(conn) : CONNECTION_BAD;
}

PGTransactionStatusType PQtransactionStatus(const PGconn* conn)
{
    NPS_PQ(PQtransactionStatus);
    return real ? real(conn) : PQTRANS_UNKNOWN;
}

char* PQerrorMessage(const PGconn* conn)
{
    NPS_PQ(PQerrorMessage);
    static char unavailable[] = "libpq is not available";
    return real ? real(conn) : unavailable;
}

PQnoticeProcessor PQsetNoticeProcessor(PGconn* conn, PQnoticeProcessor proc, void* arg)
{
    NPS_PQ(PQsetNoticeProcessor);
    return real ? real(conn, proc, arg) : nullptr;
}

int PQsocket(const PGconn* conn)
{
    NPS_PQ(PQsocket);
    return real ? real(conn) : -1;
}

int PQsetnonblocking(PGconn* conn, int arg)
{
    NPS_PQ(PQsetnonblocking);
    return real ? real(conn, arg) : -1;
}

int PQconsumeInput(PGconn* conn)
{
    NPS_PQ(PQconsumeInput);
    return real ? real(conn) : 0;
}

PGnotify* PQnotifies(PGconn* conn)
{
    NPS_PQ(PQnotifies);
    return real ? real(conn) : nullptr;
}

PGresult* PQexec(PGconn* conn, const char* query)
{
    NPS_PQ(PQexec);
    return real ? real(conn, query) : nullptr;
}

PGresult* PQprepare(PGconn* conn, const char* name, const char* query, int n, const Oid* types)
{
    NPS_PQ(PQprepare);
    return real ? real(conn, name, query, n, types) : nullptr;
}

PGresult* PQexecPrepared(PGconn* conn, const char* name, int n, const char* const* values, const int* lengths,
                         const int* formats, int result_format)
{
    NPS_PQ(PQexecPrepared);
    return real ? real(conn, name, n, values, lengths, formats, result_format) : nullptr;
}

ExecStatusType PQresultStatus(const PGresult* res)
{
    NPS_PQ(PQresultStatus);
    return real ? real(res) : PGRES_FATAL_ERROR;
}

char* PQresultErrorMessage(const PGresult* res)
{
    NPS_PQ(PQresultErrorMessage);
    static char none[] = "";
    return real ? real(res) : none;
}

char* PQresultErrorField(const PGresult* res, int code)
{
    NPS_PQ(PQresultErrorField);
    return real ? real(res, code) : nullptr;
}

void PQclear(PGresult* res)
{
    NPS_PQ(PQclear);
    if (real)
        real(res);
}

int PQntuples(const PGresult* res)
{
    NPS_PQ(PQntuples);
    return real ? real(res) : 0;
}

char* PQgetvalue(const PGresult* res, int row, int column)
{
    NPS_PQ(PQgetvalue);
    static char empty[] = "";
    return real ? real(res, row, column) : empty;
}

int PQgetlength(const PGresult* res, int row, int column)
{
    NPS_PQ(PQgetlength);
    return real ? real(res, row, column) : 0;
}

int PQgetisnull(const PGresult* res, int row, int column)
{
    NPS_PQ(PQgetisnull);
    return real ? real(res, row, column) : 1;
}

char* PQcmdTuples(PGresult* res)
{
    NPS_PQ(PQcmdTuples);
    static char none[] = "";
    return real ? real(res) : none;
}

unsigned char* PQunescapeBytea(const unsigned char* from, size_t* length)
{
    NPS_PQ(PQunescapeBytea);
    return real ? real(from, length) : nullptr;
}

void PQfreemem(void* ptr)
{
    NPS_PQ(PQfreemem);
    if (real)
        real(ptr);
}

}  // extern "C"
#pragma GCC visibility pop
