"""Reading what the in-node prepare script printed: systemd state, failed units, host key."""

from __future__ import annotations

import pytest

from ufcctl.lab.nodes import PREPARE_SCRIPT, Prepared, parse_prepare_output

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJWGdKHEdfnQVDHELz28y7c0cT8EmKmiiUzZw8uAy8zd"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (f"state=running\nhostkey={KEY} root@n1\n", Prepared("running", (), KEY)),
        (f"state=degraded\nfailed=a.service\nfailed=b.mount\nhostkey={KEY}\n",
         Prepared("degraded", ("a.service", "b.mount"), KEY)),
        ("state=starting\n", Prepared("starting", (), None)),
        ("state=running\nhostkey=\n", Prepared("running", (), None)),
        ("state=running\nhostkey=ssh-rsa AAAAB3\n", Prepared("running", (), None)),
        ("", Prepared("", (), None)),
    ],
    ids=["running", "degraded-with-units", "gave-up-booting", "no-host-key", "wrong-key-type", "no-output"],
)
def test_parse_prepare_output(output: str, expected: Prepared) -> None:
    assert parse_prepare_output(output) == expected


def test_script_takes_gateway_and_timeout_as_arguments() -> None:
    # Values reach the script as $1/$2, never pasted into its text (no quoting pitfalls).
    assert '"$1"' in PREPARE_SCRIPT and "$2" in PREPARE_SCRIPT
    assert "{" + "gateway" + "}" not in PREPARE_SCRIPT
