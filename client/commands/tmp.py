"""`vigil tmp ls` and `vigil tmp release NAME…`: the CLI thread's managed temporary helpers
(the `Temporary` method; README "Managed temporary helpers").

`release` quotes a revision, as the method requires: the one given with `--revision` (what
`vigil tmp ls` showed: the release is refused whole if anything changed since), else the
revision of a listing read just before. Exit status 0 when every name was released, 1 when
any stayed (in use, not found, refused) — each is reported on its own line either way.
"""

from __future__ import annotations

import argparse
import time

from .common import json_flag


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


def _usage(u) -> str:
    def known(value) -> str:
        return "?" if value is None else str(value)

    over = {True: ", OVER BUDGET", False: "", None: ", budget unknown"}[u.temporary_over_budget]
    return (f"{known(u.temporary_file_count)} of {u.temporary_budget_files} helpers, "
            f"{known(u.temporary_bytes)} of {u.temporary_budget_bytes} bytes{over}")


def human_list(r) -> str:
    lines = [f"{r.directory}  (revision {r.revision})", _usage(r.usage)]
    for h in r.helpers:
        kind = "" if h.kind == "file" else f" ({h.kind})"
        lines.append(f"{h.size_bytes:>10}  {_when(h.mtime_unix_ms)}  {h.name}{kind}")
    if r.helpers_omitted:
        lines.append(f"… and {r.helpers_omitted} more")
    m = r.maintenance
    if m.old_helpers:
        lines.append(f"older than {m.old_after_seconds:g} s (kept): {', '.join(m.old_helpers)}")
    for s in m.siblings:
        owner = "thread" if s.thread_known else "gone thread"
        count = "?" if s.temporary_file_count is None else s.temporary_file_count
        lines.append(f"other directory of {owner} {s.thread_id}: {count} helpers (kept)")
    return "\n".join(lines)


def human_release(r) -> str:
    lines = []
    for item in r.results:
        why = f" ({item.reason}" + (f", pid {item.pid}" if item.pid else "") + ")" \
            if item.reason else ""
        lines.append(f"{item.status:<9} {item.name!r}{why}")
    lines.append(f"revision {r.revision}; {_usage(r.usage)}")
    return "\n".join(lines)


def cmd_tmp_ls(args: argparse.Namespace) -> int:
    from .. import output
    from .common import open_scope

    client, scope = open_scope(args)
    with client:
        result = scope.call("Temporary", action={"type": "list"})
    output.emit(result, args.json, human_list)
    return output.OK


def cmd_tmp_release(args: argparse.Namespace) -> int:
    from .. import output
    from .common import open_scope

    client, scope = open_scope(args)
    with client:
        revision = args.revision
        if revision is None:
            revision = scope.call("Temporary", action={"type": "list"}).revision
        result = scope.call("Temporary", action={"type": "release_temporary",
                                                 "names": args.names, "revision": revision})
    output.emit(result, args.json, human_release)
    return output.FAILED if result.partial else output.OK


def add_parsers(sub) -> None:
    p = sub.add_parser("tmp", help="this workspace's managed temporary helpers (list, release)",
                       description="The CLI thread's managed directory for throwaway helper "
                                   "scripts and data files ($VIGIL_TEMPORARY_DIR in `vigil sh`): "
                                   "list it, or release helpers that nothing of the thread "
                                   "uses any more.")
    tsub = p.add_subparsers(dest="tmp_command", metavar="ACTION", required=True)
    q = tsub.add_parser("ls", help="list the helpers (name, size, mtime), the directory's "
                                   "revision and the budget")
    json_flag(q)
    q.set_defaults(handler=cmd_tmp_ls)
    q = tsub.add_parser("release", help="delete named helpers, unless one is still open, "
                                        "mapped, running or named by a running command")
    q.add_argument("names", nargs="+", metavar="NAME",
                   help="a helper's plain name (no '/'); symlinks are refused")
    q.add_argument("--revision", default=None,
                   help="the revision `vigil tmp ls` showed: refuse everything if the "
                        "directory changed since (default: the current one)")
    json_flag(q)
    q.set_defaults(handler=cmd_tmp_release)
