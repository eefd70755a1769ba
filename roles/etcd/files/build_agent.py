"""Pack the defrag agent's modules from the ufcctl package into one zip the nodes import from.

Run on the controller by roles/etcd (tasks/agent.yml). The zip is byte-for-byte reproducible
(sorted entries, fixed timestamps), and rewritten only when its content changes, so the copy to
the nodes stays idempotent. Prints {"changed": bool}.
"""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path

STAMP = (1980, 1, 1, 0, 0, 0)
INIT = b'"""Shipped by roles/etcd: the subset of ufcctl the etcd agent needs."""\n'


def build(source: Path, modules: list[str]) -> bytes:
    entries: dict[str, bytes] = {}
    for module in modules:
        entries[f"ufcctl/{module}"] = (source / module).read_bytes()
        package = Path(module).parent
        while True:  # every package on the way gets an __init__.py
            entries.setdefault(str(Path("ufcctl") / package / "__init__.py"), INIT)
            if package == Path("."):
                break
            package = package.parent
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, entries[name])
    return buffer.getvalue()


def main(argv: list[str]) -> int:
    source, dest, modules = Path(argv[1]), Path(argv[2]), argv[3:]
    data = build(source, modules)
    changed = not dest.is_file() or dest.read_bytes() != data
    if changed:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(dest)
    print(json.dumps({"changed": changed, "path": str(dest), "bytes": len(data)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
