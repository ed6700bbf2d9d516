// Validate agent-sandbox objects (SandboxTemplate, SandboxClaim) against the
// vendored CRDs' openAPIV3Schema (agent-sandbox/, README there) with ajv
// (+ ajv-formats: date-time, int32, int64); a SandboxTemplate's
// podTemplate.spec is validated as a core/v1 Pod's spec with kubernetes-models.
// usage: node sandbox_validate.mjs CRDS.json OBJECTS.json
//   CRDS.json: a JSON array of CustomResourceDefinition objects
// One TAP line per object; exit 1 when any fails or an object has no CRD.
// Run it from a directory whose node_modules holds ajv, ajv-formats, kubernetes-models.
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { Pod } from "kubernetes-models/v1";

const crds = JSON.parse(readFileSync(process.argv[2], "utf8"));
const docs = JSON.parse(readFileSync(process.argv[3], "utf8"));
// strict: false lets the x-kubernetes-* annotations through (ajv would
// refuse unknown keywords); they carry no structural rule ajv could check.
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const schemas = new Map();
for (const c of crds)
  for (const v of c.spec.versions)
    schemas.set(`${c.spec.group}/${v.name} ${c.spec.names.kind}`, ajv.compile(v.schema.openAPIV3Schema));

let failed = 0;
for (const d of docs) {
  const key = `${d.apiVersion} ${d.kind}`;
  const what = `${key} ${d.metadata?.name ?? "?"}`;
  const validate = schemas.get(key);
  if (!validate) {
    failed++;
    console.log(`not ok - ${what}: no vendored CRD for this kind`);
    continue;
  }
  if (!validate(d)) {
    failed++;
    console.log(`not ok - ${what}: ${ajv.errorsText(validate.errors).slice(0, 400)}`);
    continue;
  }
  if (d.kind === "SandboxTemplate") {
    try {
      new Pod({ apiVersion: "v1", kind: "Pod", metadata: { name: d.metadata.name }, spec: d.spec.podTemplate.spec }).validate();
    } catch (e) {
      failed++;
      console.log(`not ok - ${what}: podTemplate.spec: ${String(e.message).replace(/\n/g, " ").slice(0, 400)}`);
      continue;
    }
  }
  console.log(`ok - ${what} is valid against the CRD schema${d.kind === "SandboxTemplate" ? " (pod spec: core/v1)" : ""}`);
}
process.exit(failed ? 1 : 0);
