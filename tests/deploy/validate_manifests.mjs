// Validates the manifests of an rl-vla3 job (`rl-vla3 up CLUSTER.yaml
// --dry-run > FILE`) against the Kubernetes API schemas (kubernetes-models),
// then checks what the job needs to run:
//   - GPU limits on the learner and inference containers;
//   - gRPC liveness and readiness probes on every container (TCP ones when it
//     mounts the TLS Secret: the kubelet's gRPC probe has no certificate);
//   - a pod annotated for Prometheus exposes the annotated port;
//   - the learner's and the inference servers' StatefulSets each name a
//     headless Service (clusterIP None) that selects their pods;
//   - every rollout worker's --inference names every inference server;
//   - the NetworkPolicy selects the job's pods and admits only them.
// Exit 0 when all hold; 1 naming each object at fault and why; 2 on usage.
//
//   npm ci --prefix tests/deploy     # once (scripts/install_deps.sh does it)
//   node tests/deploy/validate_manifests.mjs manifests.yaml
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import {
  ConfigMap,
  Namespace,
  PersistentVolumeClaim,
  Secret,
  Service,
} from "kubernetes-models/v1";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";

const MODELS = new Map(
  [
    Namespace,
    ConfigMap,
    Secret,
    PersistentVolumeClaim,
    Service,
    StatefulSet,
    Deployment,
    NetworkPolicy,
  ].map((m) => [`${m.apiVersion}/${m.kind}`, m]),
);
const GPU = "nvidia.com/gpu";
const INSTANCE = "app.kubernetes.io/instance";
const COMPONENT = "app.kubernetes.io/component";

const errors = [];
const fail = (what, why) => errors.push(`${what}: ${why}`);
const idOf = (o, i) =>
  `${o?.kind ?? "?"} ${o?.metadata?.name ?? "?"} (document ${i + 1})`;

// Every document parsed as Kubernetes reads YAML (1.1: yes/no/on/off are
// booleans) and validated by the model of its apiVersion/kind.
function load(path) {
  const objects = [];
  const docs = parseAllDocuments(readFileSync(path, "utf8"), {
    version: "1.1",
  });
  if (!Array.isArray(docs)) return objects; // an empty stream
  docs.forEach((doc, i) => {
    if (doc.errors.length > 0) {
      fail(`document ${i + 1}`, `invalid YAML: ${doc.errors[0].message}`);
      return;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) return;
    const id = idOf(obj, i);
    const Model = MODELS.get(`${obj.apiVersion}/${obj.kind}`);
    if (!Model) {
      fail(id, `unknown apiVersion/kind ${obj.apiVersion}/${obj.kind}`);
      return;
    }
    try {
      new Model(obj).validate();
    } catch (e) {
      fail(id, `invalid: ${e.message}`);
      return;
    }
    objects.push({ obj, id });
  });
  return objects;
}

function matches(selector, labels) {
  return Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);
}

function checkContainers({ obj, id }) {
  const component = obj.metadata?.labels?.[COMPONENT];
  for (const c of obj.spec.template.spec.containers) {
    const where = `${id} container ${c.name}`;
    const tls = (c.volumeMounts ?? []).some((m) => m.name === "tls");
    for (const probe of ["livenessProbe", "readinessProbe"]) {
      const port = tls ? c[probe]?.tcpSocket?.port : c[probe]?.grpc?.port;
      if (!Number.isInteger(port)) {
        fail(where, tls ? `no TCP ${probe} (tcpSocket.port) with TLS`
                        : `no gRPC ${probe} (grpc.port)`);
      }
    }
    const scrape = obj.spec.template.metadata?.annotations?.["prometheus.io/port"];
    if (scrape !== undefined &&
        !(c.ports ?? []).some((p) => String(p.containerPort) === scrape)) {
      fail(where, `prometheus.io/port ${scrape} is not a container port`);
    }
    const gpus = Number(c.resources?.limits?.[GPU] ?? 0);
    if ((component === "learner" || component === "inference") && !(gpus > 0)) {
      fail(where, `no ${GPU} limit`);
    }
  }
}

// The learner ranks and the inference servers have stable names: each
// StatefulSet's serviceName names a headless Service selecting its pods.
function checkHeadlessServices(objects) {
  for (const role of ["learner", "inference"]) {
    const sets = objects.filter(
      ({ obj }) =>
        obj.kind === "StatefulSet" && obj.metadata.labels?.[COMPONENT] === role,
    );
    if (sets.length !== 1) fail(role, `expected one ${role} StatefulSet`);
    for (const { obj, id } of sets) {
      const svc = objects.find(
        (o) => o.obj.kind === "Service" && o.obj.metadata.name === obj.spec.serviceName,
      );
      if (!svc) {
        fail(id, `serviceName ${obj.spec.serviceName} names no Service`);
      } else if (svc.obj.spec.clusterIP !== "None") {
        fail(svc.id, `the ${role} Service is not headless (clusterIP: None)`);
      } else if (!matches(svc.obj.spec.selector, obj.spec.template.metadata.labels)) {
        fail(svc.id, `does not select the ${role} pods`);
      }
    }
  }
}

// Every rollout worker names every inference server (NAME-I.SERVICE:PORT for
// I < replicas): it shards its envs over them and fails over itself.
function checkRolloutSeesEveryInferenceServer(objects) {
  const inference = objects.find(
    ({ obj }) => obj.kind === "StatefulSet" && obj.metadata.labels?.[COMPONENT] === "inference",
  );
  const rollout = objects.find(
    ({ obj }) => obj.kind === "StatefulSet" && obj.metadata.labels?.[COMPONENT] === "rollout",
  );
  if (!inference || !rollout) return;
  const name = inference.obj.metadata.name;
  const port = inference.obj.spec.template.spec.containers[0].ports?.[0]?.containerPort;
  const want = Array.from(
    { length: inference.obj.spec.replicas },
    (_, i) => `${name}-${i}.${inference.obj.spec.serviceName}:${port}`,
  );
  const args = rollout.obj.spec.template.spec.containers[0].args ?? [];
  const at = args.indexOf("--inference");
  const got = at >= 0 ? (args[at + 1] ?? "").split(",") : [];
  if (got.join(",") !== want.join(",")) {
    fail(rollout.id, `--inference is "${got.join(",")}", expected every server: ${want.join(",")}`);
  }
}

function checkNetworkPolicy(objects) {
  const workloads = objects.filter(({ obj }) =>
    ["StatefulSet", "Deployment"].includes(obj.kind),
  );
  const policies = objects.filter(({ obj }) => obj.kind === "NetworkPolicy");
  if (policies.length === 0) fail("NetworkPolicy", "none in the manifests");
  for (const { obj, id } of policies) {
    const selector = obj.spec.podSelector?.matchLabels;
    if (!selector?.[INSTANCE]) fail(id, `podSelector without ${INSTANCE}`);
    for (const w of workloads) {
      if (!matches(selector, w.obj.spec.template.metadata.labels)) {
        fail(id, `does not select the pods of ${w.id}`);
      }
    }
    // Every rule names its sources: the job's own pods (any port), or a
    // scraper's namespace (and pods) on the listed ports only. A rule without
    // `from` would admit any source.
    const rules = obj.spec.ingress ?? [];
    const sameJob = (p) =>
      !p.namespaceSelector && p.podSelector?.matchLabels?.[INSTANCE] === selector?.[INSTANCE];
    const scraper = (p, rule) =>
      p.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"] &&
      (rule.ports ?? []).length > 0;
    if (
      !(obj.spec.policyTypes ?? []).includes("Ingress") ||
      !rules.some((rule) => (rule.from ?? []).some(sameJob)) ||
      rules.some((rule) => (rule.from ?? []).length === 0) ||
      rules.some((rule) => rule.from.some((p) => !sameJob(p) && !scraper(p, rule)))
    ) {
      fail(id, "ingress is not limited to the job's own pods and a named scraper's ports");
    }
  }
}

if (process.argv.length !== 3) {
  console.error("usage: node validate_manifests.mjs MANIFESTS.yaml");
  process.exit(2);
}
const objects = load(process.argv[2]);
if (objects.length === 0 && errors.length === 0) fail(process.argv[2], "no objects");
if (errors.length === 0) {
  objects
    .filter(({ obj }) => ["StatefulSet", "Deployment"].includes(obj.kind))
    .forEach(checkContainers);
  checkHeadlessServices(objects);
  checkRolloutSeesEveryInferenceServer(objects);
  checkNetworkPolicy(objects);
}
if (errors.length > 0) {
  for (const e of errors) console.error(`validate_manifests: ${e}`);
  process.exit(1);
}
console.log(
  `validate_manifests: ${objects.length} objects valid (${[
    ...new Set(objects.map(({ obj }) => obj.kind)),
  ].join(", ")})`,
);
