"""ansible.cfg, the one place Ansible's settings live: what a ufcctl run must hand ansible-runner from it.

ufcctl runs the playbooks through ansible-runner with ANSIBLE_CONFIG pointing at the ansible.cfg it
ships (ufcctl/paths.py), so a run and a plain `ansible-playbook` with that file read the same settings. A few
settings ansible-runner replaces with its own value unless the environment names them; for those,
ufcctl passes ansible.cfg's value on (never one of its own).
"""

from __future__ import annotations

import configparser
from pathlib import Path

from ufcctl.paths import ANSIBLE_CFG

# env var -> (section, key, Ansible's default when ansible.cfg does not set it).
# host_key_checking: ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False unless the environment
# has it (ansible_runner/config/_base.py, 2.4): ufcctl runs would accept any host key while
# `ansible-playbook` with the same ansible.cfg refuses an unknown one. Ansible then also puts
# `-o StrictHostKeyChecking=no` before the inventory's ssh_common_args, and ssh keeps the first
# value of an option, so even an inventory's `StrictHostKeyChecking=yes` would be ignored.
RUNNER_OVERRIDDEN = {
    "ANSIBLE_HOST_KEY_CHECKING": ("defaults", "host_key_checking", "True"),
}


def runner_env(path: Path = ANSIBLE_CFG) -> dict[str, str]:
    """ANSIBLE_* values taken from ansible.cfg for the settings ansible-runner would otherwise override."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return {
        env: parser.get(section, key, fallback=default)
        for env, (section, key, default) in RUNNER_OVERRIDDEN.items()
    }
