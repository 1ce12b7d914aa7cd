// SPDX-License-Identifier: Apache-2.0
// The sym_ functions of nps/lazy/pq.hpp: each resolves libpq's function
// of the same name on first use (lazy_library.hpp) and forwards to it.
#include "lazy_library.hpp"
#include "nps/lazy/pq.hpp"

namespace {

nps::lazy::LazyLibrary g_pq("libpq.so.5");

}  // namespace

#define NPS_PQ(name) static auto* const real = nps::lazy::resolve<decltype(::name)>(g_pq, #name)

#pragma GCC visibility push(hidden)
// nullptr: the caller reports that libpq could not be loaded.
PGconn* sym_PQconnectdb(const char* conninfo)
{
    NPS_PQ(PQconnectdb);
    return real ? real(conninfo) : nullptr;
}

void sym_PQfinish(PGconn* conn)
{
    NPS_PQ(PQfinish);
    if (real)
        real(conn);
}

ConnStatusType sym_PQstatus(const PGconn* conn)
{
    NPS_PQ(PQstatus);
    return real ? real(conn) : CONNECTION_BAD;
}

PGTransactionStatusType sym_PQtransactionStatus(const PGconn* conn)
{
    NPS_PQ(PQtransactionStatus);
    return real ? real(conn) : PQTRANS_UNKNOWN;
}

char* sym_PQerrorMessage(const PGconn* conn)
{
    NPS_PQ(PQerrorMessage);
    static char unavailable[] = "libpq is not available";
    return real ? real(conn) : unavailable;
}

PQnoticeProcessor sym_PQsetNoticeProcessor(PGconn* conn, PQnoticeProcessor proc, void* arg)
{
    NPS_PQ(PQsetNoticeProcessor);
    return real ? real(conn, proc, arg) : nullptr;
}

int sym_PQsocket(const PGconn* conn)
{
    NPS_PQ(PQsocket);
    return real ? real(conn) : -1;
}

int sym_PQsetnonblocking(PGconn* conn, int arg)
{
    NPS_PQ(PQsetnonblocking);
    return real ? real(conn, arg) : -1;
}

int sym_PQconsumeInput(PGconn* conn)
{
    NPS_PQ(PQconsumeInput);
    return real ? real(conn) : 0;
}

PGnotify* sym_PQnotifies(PGconn* conn)
{
    NPS_PQ(PQnotifies);
    return real ? real(conn) : nullptr;
}

PGresult* sym_PQexec(PGconn* conn, const char* query)
{
    NPS_PQ(PQexec);
    return real ? real(conn, query) : nullptr;
}

PGresult* sym_PQprepare(PGconn* conn, const char* name, const char* query, int n, const Oid* types)
{
    NPS_PQ(PQprepare);
    return real ? real(conn, name, query, n, types) : nullptr;
}

PGresult* sym_PQexecPrepared(PGconn* conn, const char* name, int n, const char* const* values, const int* lengths,
                         const int* formats, int result_format)
{
    NPS_PQ(PQexecPrepared);
    return real ? real(conn, name, n, values, lengths, formats, result_format) : nullptr;
}

PGresult* sym_PQexecParams(PGconn* conn, const char* command, int n, const Oid* types, const char* const* values,
                           const int* lengths, const int* formats, int result_format)
{
    NPS_PQ(PQexecParams);
    return real ? real(conn, command, n, types, values, lengths, formats, result_format) : nullptr;
}

ExecStatusType sym_PQresultStatus(const PGresult* res)
{
    NPS_PQ(PQresultStatus);
    return real ? real(res) : PGRES_FATAL_ERROR;
}

char* sym_PQresultErrorMessage(const PGresult* res)
{
    NPS_PQ(PQresultErrorMessage);
    static char none[] = "";
    return real ? real(res) : none;
}

char* sym_PQresultErrorField(const PGresult* res, int code)
{
    NPS_PQ(PQresultErrorField);
    return real ? real(res, code) : nullptr;
}

void sym_PQclear(PGresult* res)
{
    NPS_PQ(PQclear);
    if (real)
        real(res);
}

int sym_PQntuples(const PGresult* res)
{
    NPS_PQ(PQntuples);
    return real ? real(res) : 0;
}

char* sym_PQgetvalue(const PGresult* res, int row, int column)
{
    NPS_PQ(PQgetvalue);
    static char empty[] = "";
    return real ? real(res, row, column) : empty;
}

int sym_PQgetlength(const PGresult* res, int row, int column)
{
    NPS_PQ(PQgetlength);
    return real ? real(res, row, column) : 0;
}

int sym_PQgetisnull(const PGresult* res, int row, int column)
{
    NPS_PQ(PQgetisnull);
    return real ? real(res, row, column) : 1;
}

char* sym_PQcmdTuples(PGresult* res)
{
    NPS_PQ(PQcmdTuples);
    static char none[] = "";
    return real ? real(res) : none;
}

unsigned char* sym_PQunescapeBytea(const unsigned char* from, size_t* length)
{
    NPS_PQ(PQunescapeBytea);
    return real ? real(from, length) : nullptr;
}

void sym_PQfreemem(void* ptr)
{
    NPS_PQ(PQfreemem);
    if (real)
        real(ptr);
}

#pragma GCC visibility pop
