"""Programs that run on the nodes, with the node's own python3 and nothing installed beside it.

Today: the etcd defrag agent's command line (`etcd_agent`, run by the
`ufcctl-etcd-defrag@<cluster>` timer) over the defrag procedure (`etcd_defrag`, with its settings
`etcd_defrag_config`, lock `etcd_defrag_lock` and compaction `etcd_compaction`; its result types are in
ufcctl.domain.etcd.defrag_result), and the member probe/join command (`etcd_join`, run by
roles/etcd), and the snapshot program (`etcd_backup`, run by the `ufcctl-etcd-backup@<cluster>`
timer and by `ufcctl etcd backup|restore` on the controller) with `nfs_copy` (its copy off the member
through libnfs's nfs-cp, the one program a node-side module runs), and `files` (the one atomic writer
of their files: metrics, checksums, snapshots, settings; the roles' modules use the same file as
ansible.module_utils.ufcctl_files, through a symlink). roles/etcd ships this package and
every ufcctl module it imports as one zip
(roles/etcd/files/build_agent.py computes that set).

The rule, so the zip runs on a bare interpreter: a module here imports the standard library and,
from ufcctl, only these modules (each of which imports only the standard library and the others):

- ufcctl.domain.etcd.rule, .defrag, .membership, .defrag_metrics, .defrag_result, .backup: the rule
  grammar, defrag policy, join decision, the agent's textfile metrics (pure functions), what
  a defrag run did (pure data, which the controller's report prints too), and snapshot file names
  and retention;
- ufcctl.engine.etcd_client and .etcd_wire: the HTTPS client of etcd's JSON gateway (http.client, ssl)
  and its encoding and answers (base64, json);
- ufcctl.engine.http_get and ufcctl.domain.urls: one HTTP(S) request under a deadline and a size
  cap, and credentials in URLs masked (http.client, ssl, re);
- the packages on the way (ufcctl, ufcctl.domain, ufcctl.domain.etcd, ufcctl.engine: docstrings).

tests/unit/test_layers.py enforces it over the whole import closure. The controller uses the same
code: `ufcctl etcd defrag` (ufcctl/app/etcd_maint.py) runs the procedure (`etcd_defrag`), never
the agent's command line.
"""
