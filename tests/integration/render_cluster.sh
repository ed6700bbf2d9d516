# Sourced by render.sh: `render cluster` and `render kubernetes
# --agent-sandbox`, checked by parsing (render_cluster_check.py), each
# checker with a mutated file that must fail it.
CCHECK="$AIRLOCK_SRC/tests/integration/render_cluster_check.py"
tap_from() { while read -r line; do
  case $line in ok*) ok "$1: ${line#ok - }" ;; "not ok"*) fail "$1: ${line#not ok - }" ;; esac
done; }
tap_from "cluster" < <(python3 "$CCHECK" cluster cluster1.yaml 1 0 airlock)
tap_from "cluster --replicas 3 --jobs" < <(python3 "$CCHECK" cluster cluster3.yaml 3 1 ops)
# Controls: the App key mounted into serve; a secrets rule in the Role.
python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] == "Deployment":
        d["spec"]["template"]["spec"]["containers"][0]["volumeMounts"].append({"name": "app-key", "mountPath": "/k"})
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))' cluster1.yaml cluster-keyleak.yaml
check_not "control: the checker rejects the App key mounted into serve" python3 "$CCHECK" cluster cluster-keyleak.yaml 1 0 airlock
sed 's/resources: \[leases\]/resources: [leases, secrets]/' cluster1.yaml >cluster-secrets.yaml
check_not "control: the checker rejects a Role that reaches secrets" python3 "$CCHECK" cluster cluster-secrets.yaml 1 0 airlock
for bad in 0 6 x 2x; do
  check_not "render cluster --replicas $bad is refused" "$AIRLOCK" render cluster --replicas "$bad"
done
"$AIRLOCK" render cluster --replicas 9 2>rep.err >/dev/null
check "--replicas out of range: the message names the option" grep -q -- "--replicas" rep.err

tap_from "agent-sandbox" < <(python3 "$CCHECK" sandbox sb.yaml $((WALL + 60)) kata)
sed 's/runtimeClassName: "kata"/runtimeClassName: "runc"/' sb.yaml >sb-runc.yaml
check_not "control: the checker rejects a sandbox without the RuntimeClass" python3 "$CCHECK" sandbox sb-runc.yaml $((WALL + 60)) kata
check_not "agent-sandbox: the Job form is not also rendered" grep -q '^kind: Job' sb.yaml
