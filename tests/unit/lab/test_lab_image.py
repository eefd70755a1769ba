"""The node image hash: it changes exactly when the Containerfile, an asset or the base's inputs change."""

from __future__ import annotations

from pathlib import Path

import pytest

from ufcctl.lab.debootstrap import RootfsSpec
from ufcctl.lab.image import IMAGE_DIR, ROOTFS, image_hash, rootfs_hash


@pytest.fixture
def image_dir(tmp_path: Path) -> Path:
    (tmp_path / "Containerfile").write_text("FROM base\nRUN true\n")
    (tmp_path / "units").mkdir()
    (tmp_path / "units" / "a.service").write_text("[Unit]\n")
    return tmp_path


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "# edited\n")


@pytest.mark.parametrize(
    "change",
    [
        lambda d: _edit(d / "Containerfile"),
        lambda d: _edit(d / "units" / "a.service"),
        lambda d: (d / "units" / "b.conf").write_text("x"),
        lambda d: (d / "units" / "a.service").rename(d / "units" / "c.service"),
        lambda d: (d / "units" / "a.service").unlink(),
    ],
    ids=["containerfile", "asset-content", "asset-added", "asset-renamed", "asset-removed"],
)
def test_any_input_change_changes_the_hash(image_dir: Path, change) -> None:
    before = image_hash(image_dir)
    change(image_dir)
    assert image_hash(image_dir) != before


def test_hash_is_stable_when_nothing_changes(image_dir: Path) -> None:
    assert image_hash(image_dir) == image_hash(image_dir)
    (image_dir / "units" / "a.service").touch()  # mtime alone is not a change
    assert image_hash(image_dir) == image_hash(image_dir)


def test_base_packages_are_part_of_the_hash(image_dir: Path) -> None:
    more = RootfsSpec(ROOTFS.suite, ROOTFS.mirror, (*ROOTFS.packages, "vim"))
    assert rootfs_hash(more) != rootfs_hash(ROOTFS)
    assert image_hash(image_dir, more) != image_hash(image_dir, ROOTFS)


def test_mirror_is_not_part_of_the_hash() -> None:
    other = RootfsSpec(ROOTFS.suite, "http://mirror.example/debian", ROOTFS.packages)
    assert rootfs_hash(other) == rootfs_hash(ROOTFS)


def test_project_image_dir_has_what_the_containerfile_copies() -> None:
    containerfile = (IMAGE_DIR / "Containerfile").read_text()
    sources = [line.split()[1] for line in containerfile.splitlines() if line.startswith("COPY ")]
    assert sources, "the Containerfile copies its assets"
    missing = [s for s in sources if not (IMAGE_DIR / s).is_file()]
    assert missing == []


def test_the_recipe_hashes_the_same_wherever_it_is_installed(tmp_path: Path) -> None:
    """A wheel installs image/ elsewhere than the checkout: the same recipe must not rebuild the image."""
    import shutil

    shutil.copytree(IMAGE_DIR, tmp_path / "site-packages" / "ufcctl" / "lab" / "image")
    assert image_hash(tmp_path / "site-packages" / "ufcctl" / "lab" / "image") == image_hash(IMAGE_DIR)
