"""Load the Jinja filter and test plugins once, in ansible-playbook's main process, before it forks.

Ansible runs every host-task in a worker process forked from the main one, and a worker's first
filter or test lookup loads every filter and test plugin file on the plugin path (ansible-core
2.19 Jinja2Loader: all of them, to map short names), which imports ufcctl's domain modules for the
roles' `ufcctl_*` filters. Done in each worker, that import is lost when the worker exits: measured
on the lab's no-op cluster phase (py-spy, 2026-11-28, issue 29) it was ~69 % of the controller's
CPU. Loaded here, in the main process, at the start of each play and task, the workers inherit the
loaded plugins (fork shares the parent's memory) and look them up in a dictionary instead.

Adjacent to the playbooks, so it is active for every run of them: ufcctl's and a plain
`ansible-playbook`'s, whatever ansible.cfg says. It changes no task and no output; a failure here
only costs the time it was meant to save (the workers then load the plugins as before).
"""

from __future__ import annotations

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader, test_loader
from ansible.utils.display import Display

display = Display()


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "ufc_plugin_preload"
    CALLBACK_NEEDS_ENABLED = False  # active wherever it is found: next to the playbooks

    def __init__(self) -> None:
        super().__init__()
        self._failed = False

    def _preload(self) -> None:
        # a play or a dynamic include_role may add plugin directories, which empties the loaders'
        # caches: loading again where nothing changed is a dictionary walk
        if self._failed:
            return
        try:
            for loader in (filter_loader, test_loader):
                for _plugin in loader.all():
                    break
        except Exception as err:  # never fail a run for a speed-up
            self._failed = True
            display.warning(f"ufc_plugin_preload: plugins not preloaded ({err}); the workers load them")

    def v2_playbook_on_play_start(self, play) -> None:  # noqa: ANN001 (Ansible's Play)
        self._preload()

    def v2_playbook_on_task_start(self, task, is_conditional) -> None:  # noqa: ANN001
        self._preload()

    def v2_playbook_on_handler_task_start(self, task) -> None:  # noqa: ANN001
        self._preload()
