#!/usr/bin/env node
// Validates rendered Kubernetes manifests (kubectl kustomize output, or plain
// YAML files) for rlvr:
//   1. every document against the Kubernetes OpenAPI schema of its kind
//      (npm kubernetes-models; ServiceMonitor from
//      @kubernetes-models/prometheus-operator; the pod templates inside JobSet
//      and PyTorchJob, whose CRDs have no package, as Job / PodTemplate);
//   2. no unknown fields anywhere (TypeScript excess-property check of each
//      document against the same package's interfaces, like
//      `kubectl --validate=strict`);
//   3. rlvr's deployment rules: non-root, read-only root FS, memory limits,
//      probes, rendezvous env, grace period, volumes and selectors that
//      resolve, NetworkPolicy for the learner's gRPC port;
//   4. the run config in each rlvr ConfigMap against common/run_config.cc's
//      schema (same check as check-run-config.mjs).
// Usage: validate-k8s.mjs [--require-gpu LABEL] [--run-config-cc F]
//                         [LABEL=]FILE.yaml...
// Each file is one rendered set (an overlay): the rules of 3. apply per set;
// the schema checks run once over all files (one TypeScript compilation).
// Exit 0 when all pass, 1 with one line per problem otherwise.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { loadRunConfigSchema, checkRunConfig } from "./run-config-schema.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const problems = [];
const problem = (where, msg) => problems.push(`${where}: ${msg}`);

// ---- arguments -------------------------------------------------------------
const args = process.argv.slice(2);
const requireGpu = new Set();
let runConfigCc = path.resolve(here, "../../common/run_config.cc");
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--require-gpu") requireGpu.add(args[++i]);
  else if (args[i] === "--run-config-cc") runConfigCc = args[++i];
  else files.push(args[i]);
}
if (files.length === 0) {
  console.error("usage: validate-k8s.mjs [--require-gpu LABEL] [LABEL=]FILE.yaml...");
  process.exit(2);
}

// ---- load documents ----------------------------------------------------------
const allDocs = []; // {obj, where, set}
const sets = [];
for (const arg of files) {
  const eq = arg.indexOf("=");
  const label = eq > 0 ? arg.slice(0, eq) : arg;
  const file = eq > 0 ? arg.slice(eq + 1) : arg;
  sets.push(label);
  const text = fs.readFileSync(file, "utf8");
  const parsed = YAML.parseAllDocuments(text);
  parsed.forEach((d, i) => {
    const tag = `${label}#${i}`;
    if (d.errors.length) {
      problem(tag, `YAML error: ${d.errors[0].message}`);
      return;
    }
    const obj = d.toJS();
    if (obj === null || obj === undefined) return;
    const name = obj?.metadata?.name ?? "?";
    allDocs.push({ obj, where: `${label}: ${obj.kind}/${name}`, set: label });
  });
  if (!allDocs.some((d) => d.set === label)) problem(label, "no Kubernetes objects found");
}

// ---- 1. schema validation ------------------------------------------------------
// Returns [{module, type, data, where}] to validate: the object itself, or the
// pod templates of a CRD without a published schema.
function targets(obj, where) {
  const api = obj.apiVersion ?? "";
  const kind = obj.kind ?? "";
  if (!api || !kind) return [{ error: "missing apiVersion or kind" }];
  if (api === "jobset.x-k8s.io/v1alpha2" && kind === "JobSet") {
    const rjobs = obj.spec?.replicatedJobs;
    if (!Array.isArray(rjobs) || rjobs.length === 0) return [{ error: "JobSet without spec.replicatedJobs" }];
    return rjobs.map((rj, i) => ({
      module: "kubernetes-models/batch/v1/Job", type: "Job",
      data: { apiVersion: "batch/v1", kind: "Job", metadata: { name: rj.name ?? `rjob-${i}` }, spec: rj.template?.spec },
      where: `${where} replicatedJobs[${i}].template`,
    }));
  }
  if (api === "kubeflow.org/v1" && kind === "PyTorchJob") {
    const specs = obj.spec?.pytorchReplicaSpecs;
    if (!specs || !specs.Master) return [{ error: "PyTorchJob without spec.pytorchReplicaSpecs.Master" }];
    return Object.entries(specs).map(([role, spec]) => {
      if (spec.template?.spec?.containers?.every((c) => c.name !== "pytorch")) {
        problem(where, `pytorchReplicaSpecs.${role}: the training-operator needs a container named "pytorch"`);
      }
      return {
        module: "kubernetes-models/v1/PodTemplate", type: "PodTemplate",
        data: { apiVersion: "v1", kind: "PodTemplate", metadata: { name: role.toLowerCase() }, template: spec.template },
        where: `${where} pytorchReplicaSpecs.${role}.template`,
      };
    });
  }
  let module;
  if (api.startsWith("monitoring.coreos.com/")) {
    module = `@kubernetes-models/prometheus-operator/${api}/${kind}`;
  } else if (!api.includes("/")) {
    module = `kubernetes-models/${api}/${kind}`;
  } else {
    module = `kubernetes-models/${api}/${kind}`;
  }
  return [{ module, type: kind, data: obj, where }];
}

const tsEntries = [];
for (const { obj, where } of allDocs) {
  for (const t of targets(obj, where)) {
    if (t.error) { problem(where, t.error); continue; }
    let mod;
    try {
      mod = await import(t.module);
    } catch {
      problem(t.where, `no schema for apiVersion ${obj.apiVersion} kind ${obj.kind} (module ${t.module})`);
      continue;
    }
    const Model = mod[t.type];
    try {
      new Model(t.data).validate();
    } catch (e) {
      problem(t.where, `schema: ${e.message}`);
    }
    tsEntries.push(t);
  }
}

// ---- 2. unknown fields (TypeScript excess-property check) ----------------------
if (tsEntries.length) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rlvr-k8s-ts-"));
  try {
    fs.symlinkSync(path.join(here, "node_modules"), path.join(dir, "node_modules"));
    const index = [];
    tsEntries.forEach((t, i) => {
      const json = JSON.stringify(t.data, null, 2);
      fs.writeFileSync(
        path.join(dir, `doc${i}.ts`),
        `import type { I${t.type} } from "${t.module}";\n` +
          `export const doc: I${t.type} = ${json};\n`);
      index.push(t.where);
    });
    fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext",
        target: "es2022", skipLibCheck: true, types: [],
      },
      include: ["doc*.ts"],
    }));
    const tsc = path.join(here, "node_modules", "typescript", "bin", "tsc");
    const r = spawnSync(process.execPath, [tsc, "-p", dir, "--pretty", "false"], { encoding: "utf8", cwd: dir });
    if (r.status !== 0) {
      const out = (r.stdout + r.stderr).trim();
      if (!out) problem("k8s", `tsc failed with status ${r.status}`);
      for (const line of out.split("\n")) {
        const m = line.match(/\bdoc(\d+)\.ts\((\d+),\d+\): error (TS\d+): (.*)$/);
        if (!m) { if (line.trim() && !line.startsWith(" ")) problem("k8s", `tsc: ${line}`); continue; }
        const i = Number(m[1]);
        const src = fs.readFileSync(path.join(dir, `doc${i}.ts`), "utf8").split("\n");
        const at = (src[Number(m[2]) - 1] ?? "").trim();
        problem(index[i], `unknown or mistyped field near \`${at}\`: ${m[4]}`);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// ---- 3. rlvr deployment rules, per rendered set ----------------------------------
let schema = null;
for (const label of sets) {
  const docs = allDocs.filter((d) => d.set === label);
  const byKind = (k) => docs.filter((d) => d.obj.kind === k);
  const configMaps = new Set(byKind("ConfigMap").map((d) => d.obj.metadata?.name));
  const isRlvr = (o) => o.metadata?.labels?.["app.kubernetes.io/name"] === "rlvr";

  function podTemplates() {
    const out = [];
    for (const { obj, where } of docs) {
      if (["StatefulSet", "Deployment"].includes(obj.kind)) out.push({ obj, tpl: obj.spec?.template, where });
      if (obj.kind === "JobSet") (obj.spec?.replicatedJobs ?? []).forEach((rj, i) => out.push({ obj, tpl: rj.template?.spec?.template, where: `${where} replicatedJobs[${i}]`, external: true }));
      if (obj.kind === "PyTorchJob") Object.entries(obj.spec?.pytorchReplicaSpecs ?? {}).forEach(([r, s]) => out.push({ obj, tpl: s.template, where: `${where} ${r}`, external: true }));
    }
    return out;
  }

  let gpuSeen = false;
  for (const { obj, tpl, where, external } of podTemplates()) {
    const spec = tpl?.spec;
    if (!spec) { problem(where, "no pod template spec"); continue; }
    if (spec.securityContext?.runAsNonRoot !== true) problem(where, "pod securityContext.runAsNonRoot must be true");
    const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
    const claimNames = new Set((obj.spec?.volumeClaimTemplates ?? []).map((c) => c.metadata?.name));
    for (const v of volumes.values()) {
      if (v.configMap && !external && !configMaps.has(v.configMap.name)) {
        problem(where, `volume "${v.name}" refers to ConfigMap "${v.configMap.name}", which is not in the rendered set`);
      }
    }
    const all = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
    for (const c of all) {
      const cw = `${where} container "${c.name}"`;
      const sc = c.securityContext ?? {};
      if (sc.allowPrivilegeEscalation !== false) problem(cw, "securityContext.allowPrivilegeEscalation must be false");
      if (sc.readOnlyRootFilesystem !== true) problem(cw, "securityContext.readOnlyRootFilesystem must be true (mount an emptyDir on /tmp)");
      if (!c.resources?.limits?.memory) problem(cw, "resources.limits.memory is required");
      if (c.resources?.limits?.["nvidia.com/gpu"]) gpuSeen = true;
      for (const m of c.volumeMounts ?? []) {
        if (!volumes.has(m.name) && !claimNames.has(m.name)) problem(cw, `volumeMount "${m.name}" has no volume or volumeClaimTemplate`);
      }
      if (sc.readOnlyRootFilesystem === true && !(c.volumeMounts ?? []).some((m) => m.mountPath === "/tmp")) {
        problem(cw, "read-only root filesystem without a writable /tmp mount");
      }
    }
    for (const c of spec.containers ?? []) {
      const cw = `${where} container "${c.name}"`;
      // Containers that serve a port need probes; learner workers serve none.
      if (!external && (c.ports ?? []).length) {
        if (!c.readinessProbe) problem(cw, "readinessProbe is required");
        if (!c.livenessProbe) problem(cw, "livenessProbe is required");
      }
      for (const p of ["startupProbe", "readinessProbe", "livenessProbe"]) {
        const probe = c[p];
        if (!probe) continue;
        const port = probe.grpc?.port ?? probe.tcpSocket?.port ?? probe.httpGet?.port;
        const ports = (c.ports ?? []).flatMap((x) => [x.containerPort, x.name]);
        if (port === undefined) problem(cw, `${p} has no grpc/tcpSocket/httpGet port`);
        else if (!ports.includes(port)) problem(cw, `${p} port ${port} is not a declared container port`);
      }
    }
    // Selectors must select the template.
    const sel = obj.spec?.selector?.matchLabels;
    if (sel && ["StatefulSet", "Deployment"].includes(obj.kind)) {
      for (const [k, v] of Object.entries(sel)) {
        if (tpl.metadata?.labels?.[k] !== v) problem(where, `selector ${k}=${v} does not match the pod template labels`);
      }
    }
  }
  if (requireGpu.has(label) && !gpuSeen) problem(label, "no container requests nvidia.com/gpu (gpu overlay expected)");

  // The learner StatefulSets: rank 0 (RANK "0", one replica, checkpoints)
  // and optional workers (RANK = pod ordinal + 1); env:// rendezvous.
  const learnerSets = byKind("StatefulSet").filter((d) =>
    isRlvr(d.obj) && d.obj.metadata?.labels?.["app.kubernetes.io/component"] === "learner");
  const envOf = (obj) => new Map(((obj.spec?.template?.spec?.containers ?? [])[0]?.env ?? []).map((e) => [e.name, e]));
  const POD_INDEX = "metadata.labels['apps.kubernetes.io/pod-index']";
  const rankZero = learnerSets.filter((d) => envOf(d.obj).get("RANK")?.value === "0");
  const totalRanks = learnerSets.reduce((n, d) => n + (d.obj.spec?.replicas ?? 1), 0);
  if (learnerSets.length && rankZero.length !== 1) {
    problem(label, `expected exactly one learner StatefulSet with RANK "0" (rank 0), found ${rankZero.length}`);
  }
  const rank0 = rankZero[0]?.obj;
  const rank0Host = rank0 ? `${rank0.metadata.name}-0.${rank0.spec?.serviceName}` : "";
  for (const { obj, where } of learnerSets) {
    const spec = obj.spec ?? {};
    const pod = spec.template?.spec ?? {};
    const c = (pod.containers ?? [])[0] ?? {};
    const env = envOf(obj);
    const isRank0 = obj === rank0;
    for (const k of ["WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]) {
      if (!env.has(k)) problem(where, `learner container lacks env ${k} (torch env:// rendezvous)`);
    }
    if (env.has("WORLD_SIZE") && Number(env.get("WORLD_SIZE").value) !== totalRanks) {
      problem(where, `WORLD_SIZE=${env.get("WORLD_SIZE").value} but the learner StatefulSets run ${totalRanks} replicas in all: the ranks would never rendezvous`);
    }
    if (!isRank0) {
      const cmd = [...(c.command ?? []), ...(c.args ?? [])].join(" ");
      const fromOrdinal = env.get("RANK")?.valueFrom?.fieldRef?.fieldPath === POD_INDEX ||
        (env.get("POD_INDEX")?.valueFrom?.fieldRef?.fieldPath === POD_INDEX && /--rank=\$\(\(\s*POD_INDEX\s*\+\s*1\s*\)\)/.test(cmd));
      if (!fromOrdinal) {
        problem(where, `a learner worker's rank must come from the pod ordinal (${POD_INDEX}), as RANK or as --rank=$((POD_INDEX + 1))`);
      }
    }
    const master = env.get("MASTER_ADDR")?.value ?? "";
    if (rank0Host && !(master === rank0Host || master.startsWith(`${rank0Host}.`))) {
      problem(where, `MASTER_ADDR "${master}" is not rank 0's stable name ${rank0Host}`);
    }
    if (spec.podManagementPolicy !== "Parallel") problem(where, "podManagementPolicy must be Parallel (all ranks start together)");
    const svc = byKind("Service").find((d) => d.obj.metadata?.name === spec.serviceName);
    if (!svc) { problem(where, `serviceName "${spec.serviceName}" has no Service in the rendered set`); continue; }
    if (!isRank0) continue;
    if ((spec.replicas ?? 1) !== 1) problem(where, `rank 0's StatefulSet must have 1 replica, has ${spec.replicas}; scale the workers`);
    if (svc.obj.spec?.clusterIP !== "None") problem(svc.where, "the learner's governing Service must be headless (clusterIP: None)");
    if (svc.obj.spec?.publishNotReadyAddresses !== true) problem(svc.where, "publishNotReadyAddresses must be true so that ranks rendezvous before readiness");
    const svcPorts = (svc.obj.spec?.ports ?? []).map((p) => p.port);
    if (!svcPorts.includes(Number(env.get("MASTER_PORT")?.value))) problem(svc.where, `MASTER_PORT ${env.get("MASTER_PORT")?.value} is not a port of the Service`);
    if (!(spec.volumeClaimTemplates ?? []).length) problem(where, "no volumeClaimTemplates: checkpoints would not survive a restart");
    if ((pod.terminationGracePeriodSeconds ?? 30) < 120) {
      problem(where, `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds ?? 30} is too short for a checkpoint on SIGTERM (>= 120)`);
    }
    if (!(c.args ?? []).includes("--metrics_bind=0.0.0.0")) problem(where, "rank 0 needs --metrics_bind=0.0.0.0 for Prometheus to reach /metrics");
  }

  // Actors dial rank 0 of a learner StatefulSet that exists.
  for (const { obj, where } of byKind("Deployment")) {
    if (!isRlvr(obj) || obj.metadata?.labels?.["app.kubernetes.io/component"] !== "actor") continue;
    const c = obj.spec?.template?.spec?.containers?.[0] ?? {};
    const flag = (c.args ?? []).find((a) => a.startsWith("--learner="));
    if (!flag) { problem(where, "actor has no --learner= flag"); continue; }
    const host = flag.slice("--learner=".length).split(":")[0];
    if (learnerSets.length && !(host === rank0Host || host.startsWith(`${rank0Host}.`))) {
      problem(where, `--learner host "${host}" is not rank 0's stable name ${rank0Host || "(no rank 0 in the rendered set)"}`);
    }
  }

  // NetworkPolicy: the learner's gRPC port is open to actors only.
  if (byKind("StatefulSet").some((d) => isRlvr(d.obj))) {
    const pols = byKind("NetworkPolicy").filter((d) => d.obj.spec?.podSelector?.matchLabels?.["app.kubernetes.io/component"] === "learner");
    if (!pols.length) problem(label, "no NetworkPolicy selects the learner pods");
    for (const { obj, where } of pols) {
      for (const rule of obj.spec?.ingress ?? []) {
        const ports = (rule.ports ?? []).map((p) => p.port);
        const opensGrpc = ports.length === 0 || ports.includes(50051) || ports.includes("grpc");
        if (!opensGrpc) continue;
        for (const peer of rule.from ?? [{}]) {
          const comp = peer.podSelector?.matchLabels?.["app.kubernetes.io/component"];
          if (peer.namespaceSelector || peer.ipBlock || !["actor", "learner"].includes(comp)) {
            problem(where, `ingress rule opens the learner gRPC port to ${JSON.stringify(peer)}; only actors (and learner ranks) may reach it`);
          }
        }
        if (!rule.from) problem(where, "ingress rule without `from` opens the learner to everyone");
      }
    }
  }

  // ---- 4. run config -----------------------------------------------------------------
  for (const { obj, where } of byKind("ConfigMap")) {
    const text = obj.data?.["config.yaml"];
    if (!isRlvr(obj) || text === undefined) continue;
    schema ??= loadRunConfigSchema(runConfigCc);
    for (const msg of checkRunConfig(text, schema)) problem(`${where} config.yaml`, msg);
  }
}

if (problems.length) {
  for (const p of problems) console.error(`FAIL ${p}`);
  console.error(`validate-k8s: ${problems.length} problem(s) in ${sets.join(", ")}`);
  process.exit(1);
}
console.log(`validate-k8s: ${allDocs.length} objects valid in ${sets.join(", ")}`);
