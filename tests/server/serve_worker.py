"""Runs ``almanac.server.serve`` in a subprocess: ``serve_worker TARGET
[--host H] [--port P] [--tokens-file F] [--insecure] [--soft-delete-reserve S]``,
port 0 by default."""

from __future__ import annotations

import argparse
import sys

from almanac.errors import CatalogError
from almanac.server import serve


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tokens-file")
    parser.add_argument("--insecure", action="store_true")
    parser.add_argument("--soft-delete-reserve", type=float, default=0.0)
    args = parser.parse_args()
    try:
        serve(
            args.target,
            host=args.host,
            port=args.port,
            tokens_file=args.tokens_file,
            insecure=args.insecure,
            soft_delete_reserve_s=args.soft_delete_reserve,
        )
    except CatalogError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
