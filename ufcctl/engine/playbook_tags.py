"""The tags a playbook can select, read statically from its YAML and the roles it reaches.

`ansible-playbook --list-tags` gives the same set but costs about 2 s of CPU (it loads every role
and argument spec); this walk reads the same files as plain YAML in milliseconds, so `deploy
--tags` can refuse a typo before anything runs. Tags are collected wherever Ansible accepts them:
plays, role entries and role dependencies, blocks, include/import of tasks and roles (and their
`apply:`), and tasks. Templated tags and file names (`{{ ... }}`) are not resolvable statically
and are skipped; tests/unit/engine/test_playbook_tags.py compares the result with --list-tags.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

try:  # libyaml's parser; the pure-Python one is about ten times slower
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

# Ansible's own tags, valid with any playbook (docs: "Special tags").
SPECIAL_TAGS = frozenset({"always", "never", "all", "tagged", "untagged"})

_TASK_LISTS = ("pre_tasks", "tasks", "post_tasks")  # handlers run when notified, tags do not select them
_BLOCK_LISTS = ("block", "rescue", "always")
_INCLUDE_TASKS = {f"{prefix}{verb}_tasks" for prefix in ("", "ansible.builtin.", "ansible.legacy.")
                  for verb in ("include", "import")}
_INCLUDE_ROLE = {f"{prefix}{verb}_role" for prefix in ("", "ansible.builtin.", "ansible.legacy.")
                 for verb in ("include", "import")}
_IMPORT_PLAYBOOK = {"import_playbook", "ansible.builtin.import_playbook"}


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """Safe YAML that reads Ansible's local tags (!unsafe, !vault) as their plain value."""


def _untagged(loader: _Loader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)  # type: ignore[arg-type]


_Loader.add_multi_constructor("!", _untagged)


class _Scan:
    def __init__(self, roles_path: Path):
        self.roles_path = roles_path
        self.tags: set[str] = set()
        self.seen: set[tuple[Path, str]] = set()

    def add(self, value: Any) -> None:
        items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
        for item in items:
            tag = str(item).strip()
            if tag and "{{" not in tag:
                self.tags.add(tag)

    def playbook(self, path: Path) -> None:
        if not self._first(path, "playbook"):
            return
        for play in _items(_load(path)):
            if not isinstance(play, dict):
                continue
            target = next((play[k] for k in _IMPORT_PLAYBOOK if k in play), None)
            if isinstance(target, str) and "{{" not in target:
                self.playbook(path.parent / target)
                continue
            self.add(play.get("tags"))
            for entry in _items(play.get("roles")):
                self.role_entry(entry)
            for key in _TASK_LISTS:
                self.tasks(play.get(key), path.parent)

    def role_entry(self, entry: Any) -> None:
        if isinstance(entry, str):
            self.role(entry, "main")
        elif isinstance(entry, dict):
            self.add(entry.get("tags"))
            name = entry.get("role") or entry.get("name")
            if isinstance(name, str):
                self.role(name, "main")

    def role(self, name: str, tasks_from: str) -> None:
        if "{{" in name or "{{" in tasks_from:
            return
        root = self.roles_path / name
        if self._first(root, tasks_from):
            self.tasks(_load(_yaml_file(root / "tasks", tasks_from)), root / "tasks")
        if self._first(root, "meta"):
            meta = _load(_yaml_file(root / "meta", "main"))
            for entry in _items(meta.get("dependencies") if isinstance(meta, dict) else None):
                self.role_entry(entry)

    def tasks(self, items: Any, here: Path) -> None:
        for task in _items(items):
            if not isinstance(task, dict):
                continue
            self.add(task.get("tags"))
            for key in _BLOCK_LISTS:
                if isinstance(task.get(key), list):
                    self.tasks(task[key], here)
            for key in _INCLUDE_TASKS & task.keys():
                self.include_tasks(task[key], here)
            for key in _INCLUDE_ROLE & task.keys():
                self.include_role(task[key])

    def include_tasks(self, value: Any, here: Path) -> None:
        if isinstance(value, dict):
            self.add(_apply_tags(value))
            value = value.get("file")
        if isinstance(value, str) and "{{" not in value:
            path = here / value
            if self._first(path, "tasks"):
                self.tasks(_load(path), path.parent)

    def include_role(self, value: Any) -> None:
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            self.add(_apply_tags(value))
            self.role(value["name"], str(value.get("tasks_from") or "main"))

    def _first(self, path: Path, kind: str) -> bool:
        key = (path, kind)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


def _apply_tags(value: dict[str, Any]) -> Any:
    apply = value.get("apply")
    return apply.get("tags") if isinstance(apply, dict) else None


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _yaml_file(directory: Path, stem: str) -> Path:
    for name in (stem, f"{stem}.yml", f"{stem}.yaml"):
        if (directory / name).is_file():
            return directory / name
    return directory / f"{stem}.yml"


def _load(path: Path) -> Any:
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def playbook_tags(playbook: Path, roles_path: Path) -> frozenset[str]:
    """Every tag declared in `playbook` and the roles and task files it reaches (no special tags)."""
    scan = _Scan(roles_path)
    scan.playbook(playbook)
    return frozenset(scan.tags)


def unknown_tags(requested: Iterable[str], known: frozenset[str]) -> list[str]:
    """The requested tags that neither the playbook nor Ansible defines, in the order given."""
    return [t for t in requested if t not in known and t not in SPECIAL_TAGS]
