"""`vigil export`: an execution's recording as a file another tool plays."""

from __future__ import annotations

import argparse

from .common import ID_HELP, open_scope

FORMATS = ("asciicast",)


def cmd_export(args: argparse.Namespace) -> int:
    import os
    import sys

    from .. import output
    from ..asciicast import Writer

    client, scope = open_scope(args)
    with client:
        eid = scope.resolve(args.id)
        writer = Writer()
        parts: list[str] = []
        offset = 0
        stop = None  # a running execution: what it had written when the export began
        while True:
            page = scope.call("recording", execution_id=eid, offset=offset)
            parts.append(writer.page(page))
            stop = page.total_bytes if stop is None else stop
            if not page.has_more or page.end_offset <= offset or page.end_offset >= stop:
                break
            offset = page.end_offset
        parts.append(writer.end())
    text = "".join(parts)
    if args.output in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        # Whole or not at all: a reader never sees half a recording under the final name.
        tmp = f"{args.output}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, args.output)
        except OSError as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            from vigil.protocol.errors import ErrorCode, VigilError

            raise VigilError(ErrorCode.STORAGE_ERROR,
                             f"cannot write {args.output}: {exc.strerror or exc}") from None
        if args.json:
            output.emit({"execution_id": eid, "format": args.format, "path": args.output,
                         "bytes": len(text.encode("utf-8"))}, True)
    return output.OK


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "export", help="write an execution's output as a recording (asciicast v2)",
        description="Write the execution's retained output with the times it arrived, its "
                    "terminal size and resizes, as an asciicast v2 recording that "
                    "`asciinema play` and the asciinema player replay. Output no longer "
                    "retained is marked in the recording; output of records made before "
                    "vigil kept arrival times is shown at once.")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--format", choices=FORMATS, default="asciicast",
                   help="recording format (default asciicast: asciicast v2)")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write to FILE (default: standard output)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="with -o: print what was written as JSON (errors too, as "
                        '{"error": {...}})')
    p.set_defaults(handler=cmd_export)
