"""The container lab (`ufcctl lab`): its commands, use cases, podman adapters and data in one package.

Inside, the layers of the rest of ufcctl hold (tests/unit/test_layers.py): `cli.py` is the click
layer; `podman.py`, `debootstrap.py`, `sshkey.py`, `hostlimits.py` and `emulators.py` are adapters
(the only modules here that run processes); the rest are use cases. `containers.conf` and `image/`
are package data. Nothing outside this package imports it except `ufcctl/cli/main.py`, and it never
imports the stand-ins in the checkout's `tests/lab_standins/` directory: it runs them as processes.
"""
