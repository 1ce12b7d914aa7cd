// SPDX-License-Identifier: Apache-2.0
// Privilege drop for the sandbox child: the bounding and ambient sets go
// first (dropping the bounding set needs CAP_SETPCAP), then groups, gid and
// uid, then every remaining set, and finally no_new_privs so that no execve
// can ever gain privileges back (setuid binaries, file capabilities).
#include <errno.h>
#include <grp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <sys/capability.h>

#include "setup.hpp"

namespace nps::sandbox::detail {

Failure drop_privileges(unsigned uid, unsigned gid, cap_t empty_caps)
{
    // Walk up to the first capability this kernel does not know (EINVAL).
    for (int cap = 0; cap < 64; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            if (errno == EINVAL)
                break;
            return {Step::drop_bounding, errno};
        }
    }
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
        return {Step::clear_ambient, errno};
    if (raw_clear_groups() < 0)
        return {Step::set_groups, errno};
    if (raw_setresgid(gid) < 0)
        return {Step::set_gid, errno};
    if (raw_setresuid(uid) < 0)
        return {Step::set_uid, errno};
    // A uid-0 sandbox keeps its sets across setresuid: clear them explicitly.
    if (::cap_set_proc(empty_caps) < 0)
        return {Step::drop_caps, errno};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return {Step::no_new_privs, errno};
    return {};
}

}  // namespace nps::sandbox::detail
