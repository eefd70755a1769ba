#!/bin/sh
# LAB NPU EMULATOR: a stand-in of the Ascend Docker Runtime installer @PACKAGE@ (not Huawei
# software). Flags as the real one (docs/reference/nodes-observability-images.md §9): --install,
# --upgrade (over an installed runtime only), --install-path=<abs>, --uninstall, --version; anything else
# is refused. Its ascend-docker-runtime passes every call through to runc, as the real one does after
# adding the NPU devices.
set -e
path=/usr/local/Ascend/Ascend-Docker-Runtime
action=
for arg in "$@"; do
  case "$arg" in
    --install) action=install ;;
    --upgrade) action=upgrade ;;
    --uninstall) action=uninstall ;;
    --version) echo "@VERSION@"; exit 0 ;;
    --install-path=/*) path="${arg#--install-path=}" ;;
    *) echo "unsupported option $arg (lab NPU emulator: --install, --upgrade, --install-path=<abs>, --uninstall, --version)" >&2; exit 2 ;;
  esac
done
log=/var/log/ascend-docker-runtime/installer.log
mkdir -p /var/log/ascend-docker-runtime
if [ "$action" = upgrade ]; then
  if [ ! -x "$path/ascend-docker-runtime" ]; then
    echo "Ascend Docker Runtime is not installed in $path: nothing to upgrade (use --install)" >&2
    exit 1
  fi
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) upgrade from $(cat "$path/version.info" 2>/dev/null || echo unknown)" >> "$log"
  action=install
fi
case "$action" in
  install)
    mkdir -p "$path" /etc/ascend-docker-runtime.d
    for bin in ascend-docker-runtime ascend-docker-hook ascend-docker-cli; do
      printf '#!/bin/sh\n# LAB NPU EMULATOR stand-in of %s (not Huawei software)\nexec runc "$@"\n' "$bin" > "$path/$bin"
      chmod 0755 "$path/$bin"
    done
    echo "@VERSION@" > "$path/version.info"
    printf '/dev/davinci_manager\n/dev/devmm_svm\n/dev/hisi_hdc\n' > /etc/ascend-docker-runtime.d/base.list
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) install @VERSION@ $path" >> "$log" ;;
  uninstall)
    rm -rf "$path" /etc/ascend-docker-runtime.d
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) uninstall $path" >> "$log" ;;
  *) echo "one of --install, --upgrade, --uninstall, --version is needed" >&2; exit 2 ;;
esac
