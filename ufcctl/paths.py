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


def state_dir() -> Path:
    """The .ufc/ directory (runs, rollout state, manifests, lab files): UFC_STATE_DIR, else ./.ufc."""
    return Path(os.environ.get("UFC_STATE_DIR") or Path.cwd() / ".ufc")


def inventories_dir() -> Path:
    """Where `--inventory NAME` and `ufcctl init NAME` look first: ./inventories of the working directory."""
    return Path.cwd() / "inventories"


def playbook(name: str) -> Path:
    return SHARE / "playbooks" / name


def resolve_inventory(value: str) -> Path:
    """`--inventory NAME`: ./inventories/NAME, else an inventory shipped with ufcctl (`sample`);
    anything that looks like a path is used as given."""
    if not value.strip():  # Path("") is the working directory: never read it by accident
        raise InputError(
            f"--inventory {shown(value)}: empty",
            "give an inventory name (inventories/NAME) or a directory path",
        )
    looks_like_path = os.sep in value or value.startswith(".") or _is_dir(Path(value))
    if looks_like_path:
        candidates = [Path(value)]
    else:
        candidates = [inventories_dir() / value, SHARE / "inventories" / value]
    for path in candidates:
        if _is_dir(path):
            return path
    if value == "lab":
        hint = "run `ufcctl lab up` here to create inventories/lab"
    elif looks_like_path:
        hint = "pass a directory holding hosts.yml"
    else:
        hint = f"create it with `ufcctl init {cut(value)}`, or pass a directory path"
    looked = " or ".join(cut(str(p), 300) for p in dict.fromkeys(candidates))
    raise InputError(f"inventory {shown(value)}: no such directory ({looked})", hint)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name past the system's limit (ENAMETOOLONG) names no directory
        return False
