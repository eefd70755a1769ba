"""Where ufcctl finds what it ships (Ansible content) and where it keeps what belongs to the user.

- Shipped with ufcctl: `ansible.cfg`, `playbooks/`, `roles/` and `inventories/sample/`. An installed
  wheel carries them in `ufcctl/share/` (pyproject.toml, `force-include`); a source checkout
  (`pip install -e .`) has the same files at its root, where plain `ansible-playbook` runs find
  them too. SHARE is whichever of the two holds them.
- The user's: inventories (`./inventories/NAME`) and run state (`./.ufc/`, or `UFC_STATE_DIR`), in
  the working directory, so a platform team keeps `inventories/prod` in its own repository and runs
  `ufcctl deploy --inventory prod` there.
"""

from __future__ import annotations

import os
from pathlib import Path

from ufcctl.errors import InputError, cut, shown

PACKAGE_DIR = Path(__file__).resolve().parent
_INSTALLED = PACKAGE_DIR / "share"
_SOURCE = PACKAGE_DIR.parent
# A source checkout: the package sits beside roles/ and pyproject.toml (None in an installed wheel).
CHECKOUT: Path | None = (
    _SOURCE if (_SOURCE / "pyproject.toml").is_file() and (_SOURCE / "roles").is_dir() else None
)
SHARE = _INSTALLED if (_INSTALLED / "ansible.cfg").is_file() else (CHECKOUT or _INSTALLED)

ANSIBLE_CFG = SHARE / "ansible.cfg"
ROLES_DIR = SHARE / "roles"
SAMPLE_INVENTORY = SHARE / "inventories" / "sample"
# The inventories ufcctl ships. Only these are looked up in SHARE: in a source checkout SHARE is the
# checkout, whose inventories/ also holds a developer's own (`lab`, written by `ufcctl lab up`), and a
# command run elsewhere must never reach those by name (a unit test once deployed onto a running lab so).
SHIPPED_INVENTORIES = ("sample",)


def state_dir() -> Path:
    """The .ufc/ directory (runs, rollout state, manifests, PKI, lab files): UFC_STATE_DIR, else ./.ufc.

    Always absolute, a relative UFC_STATE_DIR taken against ufcctl's working directory: Ansible runs
    in a directory of its own (ansible-runner's), so a relative path handed on would land elsewhere,
    and every Ansible run ufcctl starts gets this very path (engine/runner.py).
    """
    given = os.environ.get("UFC_STATE_DIR") or ".ufc"
    _check_path_length(given, "UFC_STATE_DIR", "set UFC_STATE_DIR to a shorter directory path")
    return Path(os.path.abspath(given))


def inventories_dir() -> Path:
    """Where `--inventory NAME` and `ufcctl init NAME` look first: ./inventories of the working directory."""
    return Path.cwd() / "inventories"


# Linux's limits (NAME_MAX, PATH_MAX): past them every open fails with ENAMETOOLONG.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4095


def _check_path_length(value: str, what: str = "--inventory",
                       hint: str = "give an inventory name (inventories/NAME) or a directory path") -> None:
    """A path (--inventory, UFC_STATE_DIR) past the file system's limits: one Error line (exit 2), not an
    OSError from deep inside."""
    if len(os.fsencode(value)) > MAX_PATH_BYTES:
        raise InputError(f"{what}: a path of {len(os.fsencode(value))} bytes (at most {MAX_PATH_BYTES})",
                         hint)
    for part in value.split(os.sep):
        if len(os.fsencode(part)) > MAX_NAME_BYTES:
            raise InputError(f"{what}: {part[:40]}...: a name of {len(os.fsencode(part))} bytes "
                             f"(a file system allows {MAX_NAME_BYTES})", hint)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError as err:  # e.g. a working directory deeper than PATH_MAX
        raise InputError(f"--inventory {cut(str(path), 300)}: {err.strerror}",
                         "pass a shorter directory path") from err


def playbook(name: str) -> Path:
    return SHARE / "playbooks" / name


def looks_like_inventory_path(value: str) -> bool:
    """The one rule for `--inventory`: a value holding a path separator or starting with `.` (`./x`,
    `../x`, `.`) is a path; anything else is a NAME. A folder of that name in the working directory
    never turns a name into a path: a checkout holds folders (`lab/`, `tests/`) that are no inventory."""
    return os.sep in value or (os.altsep is not None and os.altsep in value) or value.startswith(".")


def inventory_candidates(value: str) -> list[Path]:
    """Where `--inventory VALUE` is looked for, in order: a path as given; a NAME in
    ./inventories/NAME of the working directory, then among the inventories ufcctl ships."""
    if looks_like_inventory_path(value):
        return [Path(value)]
    shipped = [SHARE / "inventories" / value] if value in SHIPPED_INVENTORIES else []
    return list(dict.fromkeys([inventories_dir() / value, *shipped]))


def resolve_inventory(value: str) -> Path:
    """`--inventory NAME|PATH` for every command (`inventory_candidates` holds the rule); an error names
    every place looked at."""
    if not value.strip():  # Path("") is the working directory: never read it by accident
        raise InputError(
            f"--inventory {shown(value)}: empty",
            "give an inventory name (inventories/NAME) or a directory path",
        )
    _check_path_length(value)
    candidates = inventory_candidates(value)
    for path in candidates:
        if _is_dir(path):
            return path
    if value == "lab":
        hint = "run `ufcctl lab up` here to create inventories/lab"
    elif looks_like_inventory_path(value):
        hint = "pass a directory holding hosts.yml"
    else:
        hint = (f"create it with `ufcctl init {cut(value)}`, or pass a directory path "
                f"(./{cut(value)} for a folder in the working directory)")
    looked = ", ".join(cut(str(p), 300) for p in candidates)
    raise InputError(f"inventory {shown(value)}: no such directory (looked in {looked})", hint)
