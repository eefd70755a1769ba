"""Where ufcctl finds the project (roles, playbooks, inventories) and keeps its state (.ufc/)."""

from __future__ import annotations

import os
from pathlib import Path

from ufcctl.errors import InputError

# ufcctl runs from a checkout (pip install -e .): roles/ and playbooks/ sit beside the package.
PROJECT_ROOT = Path(os.environ.get("UFC_PROJECT_ROOT", Path(__file__).resolve().parent.parent))


def state_dir() -> Path:
    """The .ufc/ directory (runs, rollout state, manifests); UFC_STATE_DIR overrides it."""
    return Path(os.environ.get("UFC_STATE_DIR", PROJECT_ROOT / ".ufc"))


def playbook(name: str) -> Path:
    return PROJECT_ROOT / "playbooks" / name


def resolve_inventory(value: str) -> Path:
    """`--inventory NAME` means inventories/NAME; anything that looks like a path is used as given."""
    if not value.strip():  # Path("") is the working directory: never read it by accident
        raise InputError(
            f"--inventory {value!r}: empty", "give an inventory name (inventories/NAME) or a directory path"
        )
    looks_like_path = os.sep in value or value.startswith(".") or Path(value).is_dir()
    path = Path(value) if looks_like_path else PROJECT_ROOT / "inventories" / value
    if not path.is_dir():
        hint = (
            "run `ufcctl lab up` to create inventories/lab"
            if value == "lab"
            else "pass a directory holding hosts.yml, or a name under inventories/"
        )
        raise InputError(f"inventory {value!r}: no such directory ({path})", hint)
    return path
