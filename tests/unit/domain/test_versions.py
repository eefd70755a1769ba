"""The version pattern: every real HDK version passes; shell syntax, paths and options do not."""

from __future__ import annotations

import pytest

from ufcctl.domain.versions import version_problem


@pytest.mark.parametrize(
    "value", ["24.1.rc3", "7.5.0.2.220", "23.0.RC3.b010", "910b", "aarch64", "x86_64", "1"]
)
def test_real_versions_and_package_words_pass(value: str) -> None:
    assert version_problem(value) is None


@pytest.mark.parametrize(
    "value",
    ["", "1.0; touch /tmp/pwned", "$(id)", "`id`", "1.0 2.0", "-rf", ".hidden", "../x", "a/b", "1.0\n",
     "1.0'", '1.0"', "1.0|x", "1.0&", "é1"],
)
def test_shell_syntax_paths_and_options_are_refused(value: str) -> None:
    problem = version_problem(value)
    assert problem is not None and repr(value) in problem
