// Checks what deploy/ ships without a cluster or an image build, for CI:
//  - every manifest in deploy/kubernetes validates against the Kubernetes schemas
//    (kubernetes-models: the OpenAPI schemas of the Kubernetes API, and the Prometheus
//    Operator's CRDs for ServiceMonitor), and the manifests agree with the daemon (probes on the
//    health port, a grace longer than the drain, a GPU requested, a headless Service);
//  - the Dockerfile parses (dockerfile-ast) and has the stages, user, health check, stop signal
//    and entrypoint docs/operations.md documents;
//  - the checks themselves fail on a broken manifest and a broken Dockerfile.
// Run: npm ci && node check.mjs  (exit 0 when everything holds; each failure is printed).
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { parseAllDocuments } from "yaml";
import { DockerfileParser } from "dockerfile-ast";
import * as k8s from "@kubernetes/client-node";

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const deploy = dirname(here);
const root = dirname(deploy);

let failures = 0;
const fail = (what) => {
  failures += 1;
  console.error(`FAIL ${what}`);
};
const pass = (what) => console.log(`ok   ${what}`);

// The model class of an apiVersion and kind: kubernetes-models/<group>/<version>/<Kind>, the
// core group without a group, CRDs from their own packages.
function modelOf(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const path =
    group === "monitoring.coreos.com"
      ? `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`
      : `kubernetes-models/${group ? `${group}/` : ""}${version}/${kind}`;
  try {
    return require(path)[kind];
  } catch {
    return undefined;
  }
}

// Fields the Kubernetes API does not have, at `path` in `value` of OpenAPI type `type`: the
// schemas above allow unknown fields, as the API server refuses them (strict field
// validation), so each field is looked up in the API's own type map (@kubernetes/client-node,
// generated from the Kubernetes OpenAPI specification).
function unknownFields(value, type, path, out) {
  if (value === null || value === undefined || typeof value !== "object") return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (Array.isArray(value)) value.forEach((v, i) => unknownFields(v, array[1], `${path}[${i}]`, out));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    for (const [key, v] of Object.entries(value)) unknownFields(v, map[1], `${path}.${key}`, out);
    return;
  }
  const Model = k8s[type];
  if (typeof Model?.getAttributeTypeMap !== "function" || Array.isArray(value)) return;
  const attributes = Model.getAttributeTypeMap();
  for (const [key, v] of Object.entries(value)) {
    const attribute = attributes.find((a) => a.baseName === key);
    if (attribute === undefined) out.push(`unknown field ${path}.${key}`);
    else unknownFields(v, attribute.type, `${path}.${key}`, out);
  }
}

// Schema errors of one object ([] when valid).
function schemaErrors(object) {
  const Model = modelOf(object?.apiVersion ?? "", object?.kind ?? "");
  if (Model === undefined) return [`no schema for ${object?.apiVersion} ${object?.kind}`];
  const errors = [];
  try {
    new Model(object).validate();
  } catch (error) {
    errors.push(String(error.message ?? error));
  }
  // The built-in kinds of version v1 (CRDs have their own schemas only).
  const version = object.apiVersion.split("/").pop();
  const type = `${version[0].toUpperCase()}${version.slice(1)}${object.kind}`;
  if (k8s[type] !== undefined) unknownFields(object, type, object.kind, errors);
  return errors;
}

function documentsOf(file) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  const objects = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0].message}`);
    const object = doc.toJS();
    if (object !== null) objects.push(object);
  }
  return objects;
}

// ---- Kubernetes -------------------------------------------------------------------------------
const manifests = join(deploy, "kubernetes");
const objects = [];
for (const name of readdirSync(manifests).filter((n) => n.endsWith(".yaml")).sort()) {
  let docs = [];
  try {
    docs = documentsOf(join(manifests, name));
  } catch (error) {
    fail(`${name} does not parse: ${error.message}`);
    continue;
  }
  for (const object of docs) {
    const what = `${name}: ${object.kind} ${object.metadata?.name}`;
    const errors = schemaErrors(object);
    if (errors.length === 0) pass(`${what} validates against its schema`);
    else fail(`${what}: ${errors.join("; ")}`);
    objects.push(object);
  }
}

const find = (kind) => objects.find((o) => o.kind === kind);
const deployment = find("Deployment");
if (deployment === undefined) {
  fail("no Deployment of sluiced");
} else {
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const flag = (name) =>
    (container.args ?? []).find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
  const seconds = (duration) => Number(/^(\d+)s$/.exec(duration ?? "")?.[1] ?? NaN);
  const drain = seconds(flag("drain_timeout"));
  if (!(pod.terminationGracePeriodSeconds > drain)) {
    fail(`terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} is not longer than the drain (${drain} s)`);
  } else {
    pass(`terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} > drain ${drain} s`);
  }
  const healthPort = Number(flag("health_listen")?.split(":").pop());
  for (const probe of ["readinessProbe", "livenessProbe"]) {
    if (container[probe]?.grpc?.port !== healthPort) {
      fail(`${probe} is not a gRPC probe of the health port ${healthPort}`);
    } else {
      pass(`${probe}: gRPC on the health port ${healthPort}`);
    }
  }
  const liveness = container.livenessProbe ?? {};
  if ((liveness.periodSeconds ?? 10) * (liveness.failureThreshold ?? 3) <= pod.terminationGracePeriodSeconds) {
    fail("the liveness probe could restart a daemon in the middle of its drain");
  }
  if (container.resources?.limits?.["nvidia.com/gpu"] === undefined) fail("no nvidia.com/gpu limit");
  if (container.resources?.limits?.memory === undefined) fail("no memory limit");
  // What sluiced may hold of the container's memory for its clients (GetInfo's host_memory,
  // from the figures docs/daemon.md publishes and DocsTest checks against the code): its
  // transfer budget and an eighth, the upload blocks it keeps warm (an eighth), gRPC's quota,
  // 194 KiB a stream waiting to open and 130 KiB a session past its client's share, and on the
  // CUDA device a 32 MiB staging ring a session and the pinned read arenas. Where a flag is
  // unset it follows the container's limit, which sluiced reads from its control group: it
  // refuses to start where the sum does not fit, and so must this manifest.
  const Ki = 1024, Mi = Ki * Ki, Gi = Mi * Ki;
  const bytes = (text, units) => {
    const m = /^(\d+)([A-Za-z]*)$/.exec(text ?? "");
    return m === null || !(m[2] in units) ? NaN : Number(m[1]) * units[m[2]];
  };
  const limit = bytes(container.resources?.limits?.memory,
                      { "": 1, k: 1e3, M: 1e6, G: 1e9, Ki, Mi, Gi });
  const flagBytes = (name, otherwise) => {
    const value = flag(name);
    return value === undefined ? otherwise : bytes(value, { "": 1, K: Ki, M: Mi, G: Gi });
  };
  const clamp = (x, lo, hi) => Math.min(Math.max(x, lo), hi);
  const budget = flagBytes("max_transfer_bytes", clamp(Math.floor(limit / 4), 256 * Mi, 8 * Gi));
  const grpc = flagBytes("grpc_memory", clamp(Math.floor(limit / 16), 256 * Mi, Gi));
  const sessions = Number(flag("max_sessions") ?? 256);
  const unopened = Number(flag("max_unopened_streams") ?? 64);
  const pinned = flagBytes("cuda_pinned_reads", Gi);
  const held = budget + Math.floor(budget / 8) + Math.floor(budget / 8) + grpc +
               unopened * 194 * Ki + sessions * 130 * Ki + sessions * 32 * Mi + pinned;
  if (!(held <= limit)) {
    fail(`sluiced may hold ${(held / Gi).toFixed(1)} GiB for its clients, past the container's ` +
         `memory limit of ${(limit / Gi).toFixed(1)} GiB: it would refuse to start`);
  } else {
    pass(`sluiced may hold ${(held / Gi).toFixed(1)} GiB for its clients, within the container's ` +
         `${(limit / Gi).toFixed(1)} GiB`);
  }
  if (container.securityContext?.readOnlyRootFilesystem !== true || pod.securityContext?.runAsNonRoot !== true) {
    fail("the container is not read-only and non-root");
  }
  const metricsPort = Number(flag("metrics_listen")?.split(":").pop());
  const annotations = deployment.spec.template.metadata.annotations ?? {};
  if (Number(annotations["prometheus.io/port"]) !== metricsPort) fail("scrape annotations miss the metrics port");
}
const service = find("Service");
if (service?.spec?.clusterIP !== "None") fail("the Service is not headless (clients balance over the daemons)");
else pass("the Service is headless");
if (find("PodDisruptionBudget") === undefined) fail("no PodDisruptionBudget");
if (find("ServiceMonitor") === undefined) fail("no ServiceMonitor");

// The schema check must be able to fail: a typo'd field and a wrong type are refused.
const broken = [
  ["an unknown field", (d) => { d.spec.template.spec.containers[0].readinesProbe = {}; }],
  ["a string where an integer goes", (d) => { d.spec.replicas = "two"; }],
];
for (const [what, breakIt] of broken) {
  if (deployment === undefined) break;
  const copy = structuredClone(deployment);
  breakIt(copy);
  if (schemaErrors(copy).length === 0) fail(`a Deployment with ${what} passed the schema check`);
  else pass(`a Deployment with ${what} is refused`);
}

// ---- Dockerfile -------------------------------------------------------------------------------
function checkDockerfile(text) {
  const problems = [];
  const dockerfile = DockerfileParser.parse(text);
  const froms = dockerfile.getFROMs();
  const stages = froms.map((f) => f.getBuildStage());
  if (stages.join(",") !== "build,runtime") problems.push(`stages are [${stages}], not [build,runtime]`);
  const args = dockerfile.getInitialARGs();
  if (!args.some((a) => a.getArgumentsContent().startsWith("BASE_IMAGE="))) {
    problems.push("no BASE_IMAGE build argument");
  }
  if (froms.some((f) => f.getImageName() !== "${BASE_IMAGE}")) problems.push("a stage does not start from BASE_IMAGE");
  // Instructions of the final (runtime) stage.
  const runtimeStart = froms.length > 0 ? froms[froms.length - 1].getRange().start.line : 0;
  const runtime = dockerfile.getInstructions().filter((i) => i.getRange().start.line >= runtimeStart);
  const one = (keyword) => runtime.filter((i) => i.getKeyword() === keyword);
  const user = one("USER").map((i) => i.getArgumentsContent());
  if (user.at(-1) !== "10001:10001") problems.push(`the runtime stage's user is ${user.at(-1)}, not 10001:10001`);
  const fromBuild = one("COPY").some((i) =>
    i.getFlags().some((f) => f.getName() === "from" && f.getValue() === "build"));
  if (!fromBuild) problems.push("the runtime stage copies nothing from the build stage");
  const healthcheck = one("HEALTHCHECK").map((i) => i.getArgumentsContent()).join(" ");
  if (!/sluice", *"health"/.test(healthcheck)) problems.push("no HEALTHCHECK running `sluice health`");
  if (one("STOPSIGNAL").map((i) => i.getArgumentsContent()).join() !== "SIGTERM") problems.push("STOPSIGNAL is not SIGTERM");
  if (!one("ENTRYPOINT").map((i) => i.getArgumentsContent()).join().includes("/usr/local/bin/sluiced")) {
    problems.push("the entrypoint is not sluiced");
  }
  const cmd = one("CMD").map((i) => i.getArgumentsContent()).join(" ");
  for (const flag of ["--health_listen=0.0.0.0:7451", "--drain_timeout="]) {
    if (!cmd.includes(flag)) problems.push(`CMD lacks ${flag}`);
  }
  if (!healthcheck.includes("127.0.0.1:7451")) problems.push("the HEALTHCHECK does not ask the health port 7451");
  const expose = one("EXPOSE").map((i) => i.getArgumentsContent()).join(" ").split(/\s+/);
  for (const port of ["7450", "7451", "9464"]) if (!expose.includes(port)) problems.push(`port ${port} is not exposed`);
  return problems;
}

const dockerfileText = readFileSync(join(root, "Dockerfile"), "utf8");
const problems = checkDockerfile(dockerfileText);
if (problems.length === 0) pass("Dockerfile: stages build and runtime from BASE_IMAGE, user 10001, health check, SIGTERM, sluiced");
for (const problem of problems) fail(`Dockerfile: ${problem}`);
for (const [what, mutate] of [
  ["a root runtime stage", (t) => t.replace("USER 10001:10001", "USER root")],
  ["no health check", (t) => t.replace(/HEALTHCHECK[^\n]*\\\n[^\n]*\n/, "")],
]) {
  if (checkDockerfile(mutate(dockerfileText)).length === 0) fail(`a Dockerfile with ${what} passed the check`);
  else pass(`a Dockerfile with ${what} is refused`);
}

// ---- Dashboard and alerts: every metric they use is one the daemon exports -------------------
const exported = new Set();
for (const source of ["server/metrics.cc", "server/grpc/daemon_metrics.cc"]) {
  for (const [, name] of readFileSync(join(root, source), "utf8").matchAll(/"(sluice_[a-z_]+)"/g)) {
    exported.add(name);
    for (const suffix of ["_bucket", "_sum", "_count"]) exported.add(name + suffix);
  }
}
const used = (text) => new Set([...text.matchAll(/\b(sluice_[a-z_]+)/g)].map((m) => m[1]));
const dashboard = JSON.parse(readFileSync(join(deploy, "grafana", "sluice-dashboard.json"), "utf8"));
const expressions = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)).join("\n");
const alerts = readFileSync(join(deploy, "prometheus", "alerts.yaml"), "utf8");
for (const [what, text] of [["the Grafana dashboard", expressions], ["the alerting rules", alerts]]) {
  const unknown = [...used(text)].filter((name) => !exported.has(name));
  if (unknown.length > 0) fail(`${what} use metrics the daemon does not export: ${unknown.join(", ")}`);
  else pass(`${what}: ${used(text).size} metrics, all exported by sluiced`);
}
if (exported.size < 20) fail(`found only ${exported.size} exported metric names in the sources`);

if (failures > 0) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("deploy checks: all passed");
