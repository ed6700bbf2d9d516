// Validate Kubernetes objects against the Kubernetes API's OpenAPI schemas
// with the kubernetes-models npm package (tommy351/kubernetes-models-ts:
// classes generated from the upstream schemas, validated with ajv).
// usage: node k8s_validate.mjs OBJECTS.json   (a JSON array of objects)
// Prints one TAP line per object; exit 1 when any fails. Kinds the package
// does not know (CRDs such as agent-sandbox's) are reported as skipped.
// Run it from a directory whose node_modules holds kubernetes-models.
import { readFileSync } from "node:fs";

const docs = JSON.parse(readFileSync(process.argv[2], "utf8"));
let failed = 0;
for (const d of docs) {
  const [group, version] = d.apiVersion.includes("/") ? d.apiVersion.split("/") : [null, d.apiVersion];
  const mod = group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`;
  const what = `${d.apiVersion} ${d.kind} ${d.metadata?.name ?? "?"}`;
  let cls;
  try {
    cls = (await import(mod))[d.kind];
  } catch (e) {
    cls = undefined;
  }
  if (!cls) {
    console.log(`ok - # SKIP ${what}: not in kubernetes-models (a CRD)`);
    continue;
  }
  try {
    new cls(d).validate();
    console.log(`ok - ${what} is valid against the API schema`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${what}: ${String(e.message).replace(/\n/g, " ").slice(0, 400)}`);
  }
}
process.exit(failed ? 1 : 0);
