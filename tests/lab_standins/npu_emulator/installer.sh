#!/bin/bash
# LAB NPU EMULATOR -- this is NOT a Huawei package. ufcctl's test lab generates it
# (tests/lab_standins/npu_emulator) to stand in for an Ascend HDK installer with the real file name:
#   Ascend-hdk-<chip>-npu-driver_<ver>_linux-<arch>.run / Ascend-hdk-<chip>-npu-firmware_<ver>.run
# It accepts the flags the real installers take (docs/reference/ascend.md §6), installs files where
# the real ones go (/usr/local/Ascend/driver/version.info, npu-smi), and obeys a per-node fault
# file (/etc/ufc-npu-emulator.json) so tests can make an install fail, hang, be slow, or leave a
# chip unhealthy. Every completed install is appended to /var/lib/ufc-npu-emulator/installs.log.
#
# Emulator rules that force callers to choose like the real deployer does (docs/reference/ascend.md §6):
#   exactly one of --full / --upgrade / --check; --upgrade needs an installed package, --full
#   refuses an installed one; without --quiet it asks for confirmation on stdin; the firmware
#   needs an installed driver; the driver needs its run user to exist.
set -u

EMU_KIND="@KIND@"          # driver | firmware
EMU_CHIP="@CHIP@"
EMU_VERSION="@VERSION@"
EMU_PACKAGE="@PACKAGE@"
FAULTS=/etc/ufc-npu-emulator.json
STATE=/var/lib/ufc-npu-emulator
LOG=/var/log/ascend_seclog/ascend_install.log

say() { echo "[$EMU_PACKAGE] $*"; }
die() { echo "[$EMU_PACKAGE] ERROR: $*" >&2; exit "${2:-1}"; }

fault() {  # fault KEY DEFAULT -> value of KEY in the fault file (JSON), or DEFAULT
    [ -r "$FAULTS" ] || { echo "$2"; return; }
    python3 - "$FAULTS" "$1" "$2" <<'PY'
import json, sys
try:
    data = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    data = {}
value = data.get(sys.argv[2], sys.argv[3])
print(json.dumps(value) if isinstance(value, (list, dict, bool)) else ("" if value is None else value))
PY
}

mode="" quiet=no user=HwHiAiUser group=HwHiAiUser prefix=/usr/local/Ascend
for arg in "$@"; do
    case "$arg" in
        --full|--upgrade|--check)
            [ -z "$mode" ] || die "options $mode and $arg cannot be combined"
            mode="$arg" ;;
        --quiet) quiet=yes ;;
        --nox11|--install-for-all) ;;
        --install-username=*) user="${arg#*=}" ;;
        --install-usergroup=*) group="${arg#*=}" ;;
        --install-path=*) prefix="${arg#*=}" ;;
        *) die "Unrecognized parameter: $arg" ;;
    esac
done
[ -n "$mode" ] || die "no install mode given: pass --full, --upgrade or --check"
[ "$(id -u)" = 0 ] || die "the installer must run as root"

if [ "$mode" = --check ]; then
    say "package integrity check: OK"
    exit 0
fi

target="$prefix/$EMU_KIND"
if [ "$mode" = --upgrade ] && [ ! -f "$target/version.info" ]; then
    die "no $EMU_KIND is installed in $prefix: use --full for a first install"
fi
if [ "$mode" = --full ] && [ -f "$target/version.info" ]; then
    die "a $EMU_KIND is already installed in $prefix: use --upgrade"
fi
if [ "$EMU_KIND" = firmware ] && [ ! -f "$prefix/driver/version.info" ]; then
    die "the driver is not installed: install the driver before the firmware"
fi
if [ "$EMU_KIND" = driver ]; then
    getent passwd "$user" >/dev/null || die "user $user does not exist: create it first"
    getent group "$group" >/dev/null || die "group $group does not exist: create it first"
fi
if [ "$quiet" = no ]; then
    printf 'Do you want to install %s %s? [y/n] ' "$EMU_KIND" "$EMU_VERSION"
    read -r answer || die "no answer on stdin: run with --quiet for unattended installs"
    case "$answer" in y|Y|yes) ;; *) die "installation cancelled" ;; esac
fi

mkdir -p "$STATE" "$(dirname "$LOG")"
echo "$(date -u +%FT%TZ) start $EMU_KIND $EMU_VERSION $mode" >> "$LOG"
if [ "$(fault hang none)" = "$EMU_KIND" ]; then
    say "installing (the emulator was told to hang)"
    exec sleep infinity
fi
seconds="$(fault "${EMU_KIND}_seconds" 0)"
[ "$seconds" = 0 ] || sleep "$seconds"
if [ "$(fault fail none)" = "$EMU_KIND" ]; then
    echo "$(date -u +%FT%TZ) failed $EMU_KIND $EMU_VERSION $mode" >> "$LOG"
    die "installation failed (fault injected by the emulator)" 1
fi

mkdir -p "$target"
printf 'Version=%s\npackage_name=%s\nemulated=true\n' "$EMU_VERSION" "$EMU_PACKAGE" > "$target/version.info.new"
mv "$target/version.info.new" "$target/version.info"
if [ "$EMU_KIND" = driver ]; then
    mkdir -p /usr/local/sbin
    sed -n '/^__NPU_SMI_BELOW__$/,/^__HCCN_TOOL_BELOW__$/p' "$0" | sed '1d;$d' > /usr/local/sbin/npu-smi.new
    chmod 0755 /usr/local/sbin/npu-smi.new
    mv /usr/local/sbin/npu-smi.new /usr/local/sbin/npu-smi
    # hccn_tool where the real driver puts it (the lab emulator's, tests/lab_standins/npu_emulator/hccn_tool.py)
    mkdir -p "$target/tools"
    sed -n '/^__HCCN_TOOL_BELOW__$/,$p' "$0" | tail -n +2 > "$target/tools/hccn_tool.new"
    chmod 0755 "$target/tools/hccn_tool.new"
    mv "$target/tools/hccn_tool.new" "$target/tools/hccn_tool"
    printf 'UserName=%s\nUserGroup=%s\nDriver_Install_Path_Param=%s\nDriver_Install_Mode=%s\n' \
        "$user" "$group" "$prefix" "${mode#--}" > /etc/ascend_install.info
    chown -R "$user:$group" "$target"
fi
echo "$EMU_KIND $EMU_VERSION ${mode#--} $(date +%s)" >> "$STATE/installs.log"
echo "$(date -u +%FT%TZ) done $EMU_KIND $EMU_VERSION $mode" >> "$LOG"
say "$EMU_KIND $EMU_VERSION installed in $target"
if [ "$(fault reboot_required false)" = true ]; then
    say "Reboot needed for installation/upgrade to take effect"
fi
exit 0
__NPU_SMI_BELOW__
