"""Emulators and stand-ins for the container lab: never packaged, never installed on real nodes.

See tests/lab_standins/README.md. ufcctl runs them as processes (`python -m
tests.lab_standins.npu_emulator ...` from the
checkout root) and never imports them; tests import them from the repository root.
"""
