#!/bin/bash
# The floors of src/lib (issue #28 item 7): scripts/layering.py passes on
# the tree, and fails on a copy with an include its README does not allow
# and on a copy with a loop between two folders that both allow it (the
# controls: the check notices each when it is there).
. "$(dirname "$0")/lib.sh"
SRC=${AIRLOCK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
L=$SRC/scripts/layering.py

out=$(python3 "$L" "$SRC/src/lib" 2>&1); rc=$?
is "the tree: no loop between folders, every include allowed ($out)" "$rc" 0

copy() { rm -rf "$T_TMP/lib"; cp -r "$SRC/src/lib" "$T_TMP/lib"; }

# control: an upward include (common/ may call nothing of airlock)
copy
printf '#include "ticket/ticket.h"\n' >>"$T_TMP/lib/common/util.c"
out=$(python3 "$L" "$T_TMP/lib" 2>&1); rc=$?
is "control: an include of a folder not on the 'May call:' line fails" "$rc" 1
like "  ... naming the file, the line and the folder" "$out" 'common/util\.c:[0-9]+: includes ticket/'

# control: a loop, each side allowed by its README (run/ -> probe/ -> run/)
copy
sed -i 's|^May call: |May call: probe/, |' "$T_TMP/lib/run/README.md"
printf '#include "probe/probe.h"\n' >>"$T_TMP/lib/run/run.c"
out=$(python3 "$L" "$T_TMP/lib" 2>&1); rc=$?
is "control: a loop between folders fails even where both READMEs allow it" "$rc" 1
like "  ... naming the folders" "$out" 'include loop between folders: probe <-> run'

# control: a folder without its README line
copy
sed -i '/^May call:/d' "$T_TMP/lib/net/README.md"
out=$(python3 "$L" "$T_TMP/lib" 2>&1); rc=$?
is "control: a folder whose README has no 'May call:' line fails" "$rc" 1
# The App key's process runs no audit (issue #28 item 2): broker/README.md
# forbids forge/audit.h, and no object of the broker's refers to the audit.
copy
printf '#include "forge/audit.h"\n' >>"$T_TMP/lib/broker/broker_jobs.c"
out=$(python3 "$L" "$T_TMP/lib" 2>&1); rc=$?
is "control: broker/ including forge/audit.h fails ('May not call:')" "$rc" 1
like "  ... naming the file and the header" "$out" 'broker/broker_jobs\.c:[0-9]+: includes forge/audit\.h'
# docs/design.md's map of the floors is checked against the includes too
D=$SRC/docs/design.md
out=$(python3 "$L" "$SRC/src/lib" "$D" 2>&1); rc=$?
is "the map: every folder on one floor of docs/design.md, every include going down ($out)" "$rc" 0
sed 's/^\(  | \)7\( | `ticket\/`\)/\10\2/' "$D" >"$T_TMP/design-up.md"
check_not "control: the edited map really moves ticket/" cmp -s "$D" "$T_TMP/design-up.md"
out=$(python3 "$L" "$SRC/src/lib" "$T_TMP/design-up.md" 2>&1); rc=$?
is "control: a map that puts ticket/ below what it includes fails" "$rc" 1
like "  ... naming the folders and the floors" "$out" '`ticket/` \(floor 0\) includes `[a-z]+/`, which the table puts on floor [1-9]'
sed 's/, `kube\/` (the Kubernetes API client)//' "$D" >"$T_TMP/design-gone.md"
out=$(python3 "$L" "$SRC/src/lib" "$T_TMP/design-gone.md" 2>&1); rc=$?
is "control: a map that leaves a folder out fails" "$rc" 1
like "  ... naming it" "$out" 'does not place `kube/`'
if command -v nm >/dev/null && [ -n "${AIRLOCK_BUILD:-}" ]; then
  objs=$(find "$AIRLOCK_BUILD" -name '*src_lib_broker_*.c.o' | sort)
  tk=$(find "$AIRLOCK_BUILD" -name '*src_lib_ticket_ticket_audit.c.o' | head -1)
  aud='^(al_audit_run|al_audit_format_json|al_audit_report_free|au_[a-z_]+)$'
  refs() { nm -u "$@" 2>/dev/null | awk '{print $NF}' | grep -Ec "$aud"; }
  like "the broker daemon's objects were found" "$(wc -w <<<"$objs")" '^[1-9]'
  is "the broker daemon's objects refer to no audit function (al_audit_run, au_*)" "$(refs $objs)" 0
  like "control: the supervisor's audit phase does (nm sees such a reference)" "$(refs "$tk")" '^[1-9]'
else
  skip "nm or the build directory missing: the object check"
fi
done_testing
