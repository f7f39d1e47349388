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
//      probes, rendezvous env, grace period, selectors; every ConfigMap,
//      Secret and claim reference resolving in the same render; secret files
//      readable by the pod's user (mode, fsGroup); the rendered image of
//      every container (--expect-image); init containers no larger than the
//      pod; scrape annotations and metrics Services only on pods that serve
//      /metrics; the learner as a finite job (Job / JobSet / PyTorchJob,
//      never a StatefulSet) that resumes after a failure and stops after
//      success, with rank 0's checkpoints on a claim and a pretrain step;
//      ServiceMonitors labelled for kube-prometheus-stack; NetworkPolicy for
//      the learner's gRPC port;
//   4. the run config in each rlvr ConfigMap against common/config/run_config.cc's
//      schema (same check as check-run-config.mjs).
// Usage: validate-k8s.mjs [--require-gpu LABEL] [--run-config-cc F]
//                         [--expect-image LABEL=IMAGE] [--external-secret NAME]
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
const expectImage = new Map();      // set label -> the image every container must render
const externalSecrets = new Set();  // Secrets the operator creates (not rendered)
let runConfigCc = path.resolve(here, "../../common/config/run_config.cc");
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--require-gpu") requireGpu.add(args[++i]);
  else if (args[i] === "--expect-image") {
    const [l, ...img] = args[++i].split("=");
    expectImage.set(l, img.join("="));
  } else if (args[i] === "--external-secret") externalSecrets.add(args[++i]);
  else if (args[i] === "--run-config-cc") runConfigCc = args[++i];
  else files.push(args[i]);
}
if (files.length === 0) {
  console.error("usage: validate-k8s.mjs [--require-gpu LABEL] [--expect-image LABEL=IMAGE] [--external-secret NAME] [LABEL=]FILE.yaml...");
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
  // YAML 1.1 like Kubernetes (sigs.k8s.io/yaml): 0440 is octal.
  const parsed = YAML.parseAllDocuments(text, { version: "1.1" });
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
const POD_INDEX = "metadata.labels['apps.kubernetes.io/pod-index']";
// The shell around `rlvr learner` in a Job: rlvr exits 0 after a graceful
// stop on SIGTERM, so the shell must forward the signal and exit non-zero.
const SIGNAL_EXIT = /trap\s+'[^']*kill\s+-TERM[^']*exit\s+1\d\d'\s+TERM/;
const flagValue = (c, flag) => {
  const all = [...(c.command ?? []), ...(c.args ?? [])].join("\n");
  const m = all.match(new RegExp(`--${flag}=(\\S+)`));
  return m ? m[1] : undefined;
};
const cmdline = (c) => [...(c.command ?? []), ...(c.args ?? [])].join(" ");
const isRlvrLearner = (c) => /\brlvr learner\b|^learner$/.test(cmdline(c)) || (c.args ?? [])[0] === "learner";
const isRlvrActor = (c) => (c.args ?? [])[0] === "actor" || /\brlvr actor\b/.test(cmdline(c));
// Kubernetes quantities -> number (cpu in cores, memory in bytes).
function quantity(q) {
  if (q === undefined || q === null) return 0;
  const m = String(q).match(/^([0-9.]+)([a-zA-Z]*)$/);
  if (!m) return NaN;
  const units = { "": 1, m: 1e-3, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
  return Number(m[1]) * (units[m[2]] ?? NaN);
}

for (const label of sets) {
  const docs = allDocs.filter((d) => d.set === label);
  const byKind = (k) => docs.filter((d) => d.obj.kind === k);
  const names = (k) => new Set(byKind(k).map((d) => d.obj.metadata?.name));
  const configMaps = names("ConfigMap");
  const secrets = names("Secret");
  const claims = names("PersistentVolumeClaim");
  const isRlvr = (o) => o.metadata?.labels?.["app.kubernetes.io/name"] === "rlvr";

  // Every pod template of the set, with its role: "rank0" (learner rank 0),
  // "worker" (learner rank > 0), "actor", or "" (anything else).
  //   {obj, tpl, where, kind, role, pods, dns}
  // pods = how many pods run this template at once; dns = the stable name of
  // its first pod where there is one.
  const templates = [];
  const roleOf = (tpl, fallback) => {
    const c = (tpl?.spec?.containers ?? [])[0] ?? {};
    if (isRlvrActor(c)) return "actor";
    const labelled = tpl?.metadata?.labels?.["app.kubernetes.io/component"] === "learner";
    if (!isRlvrLearner(c) && !labelled) return fallback;
    const env = new Map((c.env ?? []).map((e) => [e.name, e]));
    const rankFlag = flagValue(c, "rank");
    if (rankFlag !== undefined) return rankFlag === "0" ? "rank0" : "worker";
    const rankEnv = env.get("RANK");
    if (rankEnv?.value === "0") return "rank0";
    if (rankEnv?.valueFrom) return "any";   // rank from an index: several ranks share the template
    return fallback;
  };
  for (const { obj, where } of docs) {
    const kind = obj.kind;
    if (["StatefulSet", "Deployment"].includes(kind)) {
      const tpl = obj.spec?.template;
      templates.push({ obj, tpl, where, kind, role: roleOf(tpl, ""), pods: obj.spec?.replicas ?? 1,
                       dns: kind === "StatefulSet" ? `${obj.metadata.name}-0.${obj.spec?.serviceName}` : "" });
    } else if (kind === "Job") {
      const tpl = obj.spec?.template;
      const ps = tpl?.spec ?? {};
      const role = roleOf(tpl, obj.spec?.completionMode === "Indexed" ? "any" : "");
      templates.push({ obj, tpl, where, kind, role, pods: obj.spec?.parallelism ?? 1,
                       dns: ps.hostname && ps.subdomain ? `${ps.hostname}.${ps.subdomain}` : "" });
    } else if (kind === "JobSet") {
      (obj.spec?.replicatedJobs ?? []).forEach((rj, i) => {
        const tpl = rj.template?.spec?.template;
        const sub = obj.spec?.network?.subdomain ?? obj.metadata.name;
        templates.push({ obj, tpl, where: `${where} replicatedJobs[${i}] (${rj.name})`, kind, rjob: rj,
                         role: roleOf(tpl, "any"), pods: (rj.replicas ?? 1) * (rj.template?.spec?.parallelism ?? 1),
                         dns: `${obj.metadata.name}-${rj.name}-0-0.${sub}` });
      });
    } else if (kind === "PyTorchJob") {
      Object.entries(obj.spec?.pytorchReplicaSpecs ?? {}).forEach(([r, s]) => {
        templates.push({ obj, tpl: s.template, where: `${where} ${r}`, kind, replicaSpec: s,
                         role: r === "Master" ? "rank0" : "worker", pods: s.replicas ?? 1,
                         dns: r === "Master" ? `${obj.metadata.name}-master-0` : "" });
      });
    }
  }

  let gpuSeen = false;
  for (const { obj, tpl, where, role } of templates) {
    const spec = tpl?.spec;
    if (!spec) { problem(where, "no pod template spec"); continue; }
    const psc = spec.securityContext ?? {};
    if (psc.runAsNonRoot !== true) problem(where, "pod securityContext.runAsNonRoot must be true");
    const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
    const claimNames = new Set((obj.spec?.volumeClaimTemplates ?? []).map((c) => c.metadata?.name));
    const all = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];

    // Every ConfigMap / Secret / claim a pod refers to must be an object of the
    // same render (kustomize renames generated ConfigMaps; a literal name that
    // missed the rename leaves the pod in ContainerCreating), except Secrets
    // the operator creates by hand (--external-secret).
    const refs = [];
    for (const v of volumes.values()) {
      if (v.configMap) refs.push(["ConfigMap", v.configMap.name, v.configMap.optional, `volume "${v.name}"`]);
      if (v.secret) refs.push(["Secret", v.secret.secretName, v.secret.optional, `volume "${v.name}"`]);
      if (v.persistentVolumeClaim) refs.push(["PersistentVolumeClaim", v.persistentVolumeClaim.claimName, false, `volume "${v.name}"`]);
      for (const src of v.projected?.sources ?? []) {
        if (src.configMap) refs.push(["ConfigMap", src.configMap.name, src.configMap.optional, `projected volume "${v.name}"`]);
        if (src.secret) refs.push(["Secret", src.secret.name, src.secret.optional, `projected volume "${v.name}"`]);
      }
    }
    for (const c of all) {
      for (const e of c.env ?? []) {
        const cm = e.valueFrom?.configMapKeyRef, sk = e.valueFrom?.secretKeyRef;
        if (cm) refs.push(["ConfigMap", cm.name, cm.optional, `container "${c.name}" env ${e.name}`]);
        if (sk) refs.push(["Secret", sk.name, sk.optional, `container "${c.name}" env ${e.name}`]);
      }
      for (const ef of c.envFrom ?? []) {
        if (ef.configMapRef) refs.push(["ConfigMap", ef.configMapRef.name, ef.configMapRef.optional, `container "${c.name}" envFrom`]);
        if (ef.secretRef) refs.push(["Secret", ef.secretRef.name, ef.secretRef.optional, `container "${c.name}" envFrom`]);
      }
    }
    for (const [kind, name, optional, what] of refs) {
      if (optional) continue;
      const known = kind === "ConfigMap" ? configMaps : kind === "Secret" ? secrets : claims;
      if (known.has(name) || (kind === "Secret" && externalSecrets.has(name))) continue;
      problem(where, `${what} refers to ${kind} "${name}", which is not in the rendered set` +
              (kind === "Secret" ? " (nor a documented --external-secret)" : ""));
    }

    // Secret files must be readable by the user the containers run as:
    // kubelet writes them owned by root, group = fsGroup (root without one),
    // with the volume's defaultMode (0644 unless set) or the item's mode.
    for (const c of all) {
      const sc = c.securityContext ?? {};
      const uid = sc.runAsUser ?? psc.runAsUser ?? 0;
      const groups = new Set([sc.runAsGroup ?? psc.runAsGroup ?? 0, ...(psc.supplementalGroups ?? [])]);
      if (psc.fsGroup !== undefined) groups.add(psc.fsGroup);
      for (const m of c.volumeMounts ?? []) {
        const v = volumes.get(m.name);
        const secretSources = v?.secret ? [v.secret] : (v?.projected?.sources ?? []).filter((s) => s.secret).map((s) => ({ ...s.secret, defaultMode: v.projected.defaultMode }));
        for (const s of secretSources) {
          const fileGid = psc.fsGroup ?? 0;
          const modes = (s.items ?? []).length ? s.items.map((it) => [it.path, it.mode ?? s.defaultMode ?? 0o644]) : [["*", s.defaultMode ?? 0o644]];
          for (const [file, mode] of modes) {
            const readable = (uid === 0 && (mode & 0o400)) || (groups.has(fileGid) && (mode & 0o040)) || (mode & 0o004);
            if (!readable) {
              problem(`${where} container "${c.name}"`,
                `secret volume "${m.name}" file ${file} has mode 0${mode.toString(8)} owned by 0:${fileGid}, ` +
                `unreadable by runAsUser ${uid} (groups ${[...groups].join(",")}): set the pod's fsGroup to a group of the user or widen defaultMode`);
            }
          }
        }
      }
    }

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
      const want = expectImage.get(label);
      if (want !== undefined && c.image !== want) problem(cw, `renders image "${c.image}", expected "${want}"`);
    }
    // An init container's requests count against the pod like the
    // containers': the pod is scheduled for the larger of the two.
    for (const res of ["cpu", "memory"]) {
      const main = (spec.containers ?? []).reduce((n, c) => n + quantity(c.resources?.requests?.[res]), 0);
      for (const c of spec.initContainers ?? []) {
        const q = quantity(c.resources?.requests?.[res]);
        if (q > main) {
          problem(`${where} init container "${c.name}"`,
            `requests ${res} ${c.resources.requests[res]}, more than the pod's containers (${main}${res === "memory" ? " bytes" : ""}): the pod would be scheduled for the init container's size`);
        }
      }
    }
    for (const c of spec.containers ?? []) {
      const cw = `${where} container "${c.name}"`;
      if ((c.ports ?? []).length && !["Job", "JobSet", "PyTorchJob"].includes(obj.kind) || (role === "rank0" && (c.ports ?? []).length)) {
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
    // GPU pods: the nvidia.com/gpu limit alone places a pod on the nodes whose
    // device plugin advertises GPUs, and those nodes are commonly tainted
    // nvidia.com/gpu:NoSchedule (so that CPU pods stay off them): a pod that
    // requests a GPU must tolerate that taint whatever its value, or it stays
    // Pending on a cluster that taints its GPU nodes.
    const gpuOf = (c) => c.resources?.limits?.["nvidia.com/gpu"] ?? c.resources?.requests?.["nvidia.com/gpu"];
    if (all.some((c) => gpuOf(c))) {
      const tolerates = (spec.tolerations ?? []).some((tl) =>
        tl.operator === "Exists" && (!tl.key || tl.key === "nvidia.com/gpu") &&
        (!tl.effect || tl.effect === "NoSchedule"));
      if (!tolerates) {
        problem(where, "requests nvidia.com/gpu but does not tolerate the taint nvidia.com/gpu:NoSchedule (key nvidia.com/gpu, operator Exists): on a cluster that taints its GPU nodes it stays Pending");
      }
    }
    // Scrape annotations only on pods that serve /metrics: a container with
    // --metrics_port=<the annotated port> that is not a learner rank > 0
    // (those run no metrics server whatever their flags say).
    const ann = tpl.metadata?.annotations ?? {};
    if (ann["prometheus.io/scrape"] === "true") {
      const port = String(ann["prometheus.io/port"] ?? "");
      const serving = (spec.containers ?? []).some((c) => flagValue(c, "metrics_port") === port &&
        (c.ports ?? []).some((p) => String(p.containerPort) === port));
      if (!serving) problem(where, `annotated prometheus.io/scrape with port ${port}, but no container serves /metrics there (--metrics_port=${port} and a containerPort)`);
      else if (role === "worker" || role === "any") {
        problem(where, "annotated prometheus.io/scrape, but its pods include learner ranks > 0, which serve no /metrics (targets down, RlvrLearnerDown); annotate rank 0's template only");
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

  // Services with a metrics port are scraped endpoint by endpoint
  // (ServiceMonitor): every pod they select must serve /metrics.
  for (const { obj, where } of byKind("Service")) {
    const mport = (obj.spec?.ports ?? []).find((p) => p.name === "metrics");
    const sel = obj.spec?.selector;
    if (!mport || !sel) continue;
    for (const t of templates) {
      const labels = t.tpl?.metadata?.labels ?? {};
      if (!Object.entries(sel).every(([k, v]) => labels[k] === v)) continue;
      if (t.role === "worker" || t.role === "any") {
        problem(where, `has a metrics port and selects ${t.where}, whose learner ranks > 0 serve no /metrics: select rank 0 only`);
      }
    }
  }

  // ---- the learner: a finite job --------------------------------------------------
  const learners = templates.filter((t) => ["rank0", "worker", "any"].includes(t.role));
  for (const t of learners) {
    if (["StatefulSet", "Deployment"].includes(t.kind)) {
      problem(t.where, `the learner runs as a ${t.kind}: at run.total_updates \`rlvr learner\` exits 0 and the ${t.kind} restarts it (resume, exit, CrashLoopBackOff, RlvrLearnerDown). Run it as a Job (or JobSet / PyTorchJob)`);
    }
  }
  const rank0s = learners.filter((t) => t.role === "rank0");
  const anyRank = learners.filter((t) => t.role === "any");
  if (learners.length && rank0s.length !== 1) {
    problem(label, `expected exactly one learner pod template for rank 0 (RANK "0", --rank=0 or a PyTorchJob Master), found ${rank0s.length}` +
            (anyRank.length ? `; ${anyRank.map((t) => t.where).join(", ")} takes its rank from an index (give rank 0 its own template: it alone serves gRPC, /metrics and checkpoints)` : ""));
  }
  const rank0 = rank0s[0];
  const totalRanks = learners.reduce((n, t) => n + t.pods, 0);
  // Group failures. A rank that dies breaks every other rank's collectives,
  // so one failure of any rank fails every rank once. The launcher must
  // restart the ranks as a group and count a group failure once (or, for two
  // plain Jobs, count it the same in both), else one Job runs out of
  // retries while the other's ranks wait for ranks that never come back.
  {
    const jobs = learners.filter((t) => t.kind === "Job");
    if (jobs.length > 1) {
      // A Job fails once its failed pods exceed backoffLimit; each group
      // failure fails all its running pods (parallelism).
      const budget = jobs.map((t) => {
        const limit = t.obj.spec?.backoffLimit ?? 6;
        return { t, limit, pods: t.pods, groups: Math.floor(limit / Math.max(1, t.pods)) };
      });
      const most = Math.max(...budget.map((b) => b.groups));
      for (const b of budget) {
        if (b.limit % Math.max(1, b.pods) !== 0 || b.groups !== most) {
          problem(b.t.where, `backoffLimit ${b.limit} with ${b.pods} pod(s) lasts ${b.groups} group failure(s) (every rank fails once per failure of any rank), while ${budget.filter((x) => x !== b).map((x) => `${x.t.obj.metadata.name} lasts ${x.groups}`).join(", ")}: at group failure ${b.groups + 1} this Job is Failed and the other Job's ranks wait for it. Set backoffLimit = pods x the same number of group failures`);
        }
      }
    }
    const jobsets = [...new Set(learners.filter((t) => t.kind === "JobSet").map((t) => t.obj))];
    for (const js of jobsets) {
      const where = `${label}: JobSet/${js.metadata?.name}`;
      const fp = js.spec?.failurePolicy ?? {};
      // JobSet failurePolicy: the first rule whose reasons, message patterns
      // and replicated Jobs match a failed child Job acts; none: RestartJobSet.
      const actionFor = (rjob, reason, message) => {
        for (const r of fp.rules ?? []) {
          if ((r.onJobFailureReasons ?? []).length && !r.onJobFailureReasons.includes(reason)) continue;
          if ((r.onJobFailureMessagePatterns ?? []).length &&
              !r.onJobFailureMessagePatterns.some((p) => new RegExp(p).test(message))) continue;
          if ((r.targetReplicatedJobs ?? []).length && !r.targetReplicatedJobs.includes(rjob)) continue;
          return r.action;
        }
        return "RestartJobSet";
      };
      for (const rj of js.spec?.replicatedJobs ?? []) {
        const jspec = rj.template?.spec ?? {};
        const rw = `${where} replicatedJobs ${rj.name}`;
        if ((jspec.backoffLimit ?? 6) !== 0) {
          problem(rw, `backoffLimit ${jspec.backoffLimit ?? 6}: a failed rank would be retried inside its own Job while the other ranks fail theirs; with 0 every failure fails the child Job at once and the JobSet restarts all ranks, counting one group failure`);
        }
        // What the Job controller writes into the failed Job's condition
        // (reason PodFailurePolicy, "... matching FailJob rule at index N"),
        // or BackoffLimitExceeded for any other failure.
        const outcome = (pred, msg) => {
          const rules = jspec.podFailurePolicy?.rules ?? [];
          const i = rules.findIndex(pred);
          if (i >= 0 && rules[i].action === "Ignore") return "Ignore";
          if (i >= 0 && rules[i].action === "FailJob") return actionFor(rj.name, "PodFailurePolicy", `${msg} matching FailJob rule at index ${i}`);
          return actionFor(rj.name, "BackoffLimitExceeded", "Job has reached the specified backoff limit");
        };
        const exit2 = outcome((r) => (r.onExitCodes?.values ?? []).includes(2) && r.onExitCodes?.operator === "In" &&
                                     [undefined, "learner", "pytorch"].includes(r.onExitCodes?.containerName),
                              "Container learner for pod ns/p failed with exit code 2");
        if (exit2 !== "FailJobSet") {
          problem(rw, `exit 2 (bad flags or config) leads to ${exit2}: give the child Job a podFailurePolicy FailJob rule for exit code 2 and the JobSet a FailJobSet rule matching it, or a bad config restarts every rank maxRestarts times`);
        }
        const disrupted = outcome((r) => (r.onPodConditions ?? []).some((c) => c.type === "DisruptionTarget"),
                                  "Pod ns/p has condition DisruptionTarget");
        if (!["RestartJobSetAndIgnoreMaxRestarts", "Ignore"].includes(disrupted)) {
          problem(rw, `a disruption (preemption, eviction, drain) leads to ${disrupted}, counted against maxRestarts: add a FailJob rule on DisruptionTarget and a RestartJobSetAndIgnoreMaxRestarts rule matching it`);
        }
        const crash = outcome(() => false, "");
        if (crash !== "RestartJobSet") problem(rw, `a crash leads to ${crash}, expected RestartJobSet (all ranks restart together, counted)`);
      }
    }
    const ptjs = [...new Set(learners.filter((t) => t.kind === "PyTorchJob").map((t) => t.obj))];
    for (const pj of ptjs) {
      const limit = pj.spec?.runPolicy?.backoffLimit ?? 0;
      const ranks = Object.values(pj.spec?.pytorchReplicaSpecs ?? {}).reduce((n, s) => n + (s.replicas ?? 1), 0);
      if (limit < ranks || limit % ranks !== 0) {
        problem(`${label}: PyTorchJob/${pj.metadata?.name}`, `runPolicy.backoffLimit ${limit} is not a multiple of the ${ranks} ranks: the training-operator counts the container restarts of all replicas, and one failure restarts every rank, so ${limit} lasts ${Math.floor(limit / ranks)} group failure(s) and the last one is cut short. Set backoffLimit = ${ranks} x the group failures to allow`);
      }
    }
  }

  for (const t of learners) {
    const ps = t.tpl?.spec ?? {};
    const c = (ps.containers ?? [])[0] ?? {};
    const env = new Map((c.env ?? []).map((e) => [e.name, e]));
    // Restart semantics: resume after a failure, stop after success.
    if (t.kind === "Job") {
      const rp = ps.restartPolicy;
      if (!["Never", "OnFailure"].includes(rp)) problem(t.where, `restartPolicy must be Never or OnFailure, is ${rp}`);
      if ((t.obj.spec?.backoffLimit ?? 6) < 1) problem(t.where, "backoffLimit 0: a crashed learner would not resume from its checkpoint");
      if (rp === "Never") {
        const rules = t.obj.spec?.podFailurePolicy?.rules ?? [];
        if (!rules.some((r) => r.action === "Ignore" && (r.onPodConditions ?? []).some((p) => p.type === "DisruptionTarget"))) {
          problem(t.where, "restartPolicy Never without a podFailurePolicy rule ignoring DisruptionTarget: every preemption or drain would count against backoffLimit");
        }
      }
      if ((t.obj.spec?.completions ?? 1) !== (t.obj.spec?.parallelism ?? 1)) problem(t.where, "completions must equal parallelism (all ranks run together)");
    } else if (t.kind === "JobSet") {
      if ((t.obj.spec?.failurePolicy?.maxRestarts ?? 0) < 1) problem(t.where, "JobSet failurePolicy.maxRestarts must be >= 1 to resume after a failure");
      if (ps.restartPolicy !== "Never" && ps.restartPolicy !== "OnFailure") problem(t.where, "restartPolicy must be Never or OnFailure");
    } else if (t.kind === "PyTorchJob") {
      if (!["OnFailure", "ExitCode"].includes(t.replicaSpec?.restartPolicy)) problem(t.where, `restartPolicy must be OnFailure or ExitCode (resume after failure, stop after success), is ${t.replicaSpec?.restartPolicy}`);
      if ((t.obj.spec?.runPolicy?.backoffLimit ?? 0) < 1) problem(t.where, "runPolicy.backoffLimit must be >= 1");
    }
    if (["Job", "JobSet", "PyTorchJob"].includes(t.kind) && !SIGNAL_EXIT.test(cmdline(c))) {
      problem(t.where, "the learner container must run `rlvr learner` under a shell that forwards SIGTERM and exits 143 (trap ... TERM): rlvr exits 0 after a graceful stop, which a Job would count as completion");
    }
    // env:// rendezvous (the training operator injects it for PyTorchJob).
    if (t.kind !== "PyTorchJob") {
      for (const k of ["WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]) {
        if (!env.has(k)) problem(t.where, `learner container lacks env ${k} (torch env:// rendezvous)`);
      }
      if (env.has("WORLD_SIZE") && Number(env.get("WORLD_SIZE").value) !== totalRanks) {
        problem(t.where, `WORLD_SIZE=${env.get("WORLD_SIZE").value} but the learner templates run ${totalRanks} pods in all: the ranks would never rendezvous`);
      }
      const master = env.get("MASTER_ADDR")?.value ?? "";
      if (rank0?.dns && !(master === rank0.dns || master.startsWith(`${rank0.dns}.`))) {
        problem(t.where, `MASTER_ADDR "${master}" is not rank 0's stable name ${rank0.dns}`);
      }
      if (t.role === "worker" && t.kind !== "StatefulSet") {
        const idx = /--rank=\$\(\(\s*JOB_COMPLETION_INDEX\s*\+\s*1\s*\)\)/.test(cmdline(c)) ||
          /--rank=\$\(\(\s*POD_INDEX\s*\+\s*1\s*\)\)/.test(cmdline(c));
        if (!idx) problem(t.where, "a learner worker's rank must be its completion index + 1 (--rank=$((JOB_COMPLETION_INDEX + 1)))");
      } else if (t.role === "worker") {
        if (env.get("POD_INDEX")?.valueFrom?.fieldRef?.fieldPath !== POD_INDEX) problem(t.where, "a StatefulSet worker's rank must come from the pod ordinal");
      }
    }
    if (t !== rank0) continue;
    // Rank 0: a stable name, checkpoints on a claim, time to checkpoint.
    if (t.kind === "Job" || t.kind === "StatefulSet") {
      if (!t.dns) problem(t.where, "rank 0 has no stable DNS name (set hostname and subdomain)");
      const svcName = t.kind === "Job" ? ps.subdomain : t.obj.spec?.serviceName;
      const svc = byKind("Service").find((d) => d.obj.metadata?.name === svcName);
      if (!svc) problem(t.where, `subdomain/serviceName "${svcName}" has no Service in the rendered set`);
      else {
        if (svc.obj.spec?.clusterIP !== "None") problem(svc.where, "rank 0's Service must be headless (clusterIP: None)");
        if (svc.obj.spec?.publishNotReadyAddresses !== true) problem(svc.where, "publishNotReadyAddresses must be true so that ranks rendezvous before readiness");
        const labels = t.tpl?.metadata?.labels ?? {};
        if (!Object.entries(svc.obj.spec?.selector ?? {}).every(([k, v]) => labels[k] === v)) problem(svc.where, `does not select rank 0's pod (${t.where}): its DNS name would not resolve`);
        const svcPorts = (svc.obj.spec?.ports ?? []).map((p) => p.port);
        if (env.has("MASTER_PORT") && !svcPorts.includes(Number(env.get("MASTER_PORT")?.value))) problem(svc.where, `MASTER_PORT ${env.get("MASTER_PORT")?.value} is not a port of the Service`);
      }
    }
    const runDir = flagValue(c, "run_dir");
    if (!runDir) problem(t.where, "rank 0 has no --run_dir: no checkpoints, nothing to resume from");
    else {
      const mount = (c.volumeMounts ?? []).filter((m) => runDir === m.mountPath || runDir.startsWith(`${m.mountPath}/`))
        .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
      const vol = mount && (ps.volumes ?? []).find((v) => v.name === mount.name);
      const onClaim = vol?.persistentVolumeClaim || (t.obj.spec?.volumeClaimTemplates ?? []).some((v) => v.metadata?.name === mount?.name);
      if (!onClaim) problem(t.where, `--run_dir ${runDir} is not on a PersistentVolumeClaim: checkpoints would not survive a new pod`);
    }
    if (!(ps.initContainers ?? []).some((ic) => /rlvr pretrain/.test(cmdline(ic)))) {
      problem(t.where, "rank 0 has no `rlvr pretrain` init container: the learner would start from a random policy");
    }
    if ((ps.terminationGracePeriodSeconds ?? 30) < 120) {
      problem(t.where, `terminationGracePeriodSeconds ${ps.terminationGracePeriodSeconds ?? 30} is too short for a checkpoint on SIGTERM (>= 120)`);
    }
    if ((c.ports ?? []).length && !(c.args ?? []).includes("--metrics_bind=0.0.0.0")) problem(t.where, "rank 0 needs --metrics_bind=0.0.0.0 for Prometheus to reach /metrics");
    // Probes: rank 0's gRPC health says SERVING only after the rendezvous
    // with the other ranks (and the resume, and the first publish). A
    // startup or readiness probe on it keeps rank 0 unready until then, and
    // the other ranks need rank 0's name to rendezvous: behind a Service that
    // publishes only ready pods (the training-operator's for a PyTorchJob)
    // no rank ever joins. Liveness probes start when the startup probe
    // passes, so they must not need the rendezvous either. /metrics is
    // served from the process's start.
    const grpcPorts = new Set(["grpc", 50051, ...(c.ports ?? []).filter((x) => x.name === "grpc").map((x) => x.containerPort)]);
    const metricsPort = (c.ports ?? []).find((x) => x.name === "metrics");
    for (const kind of ["startupProbe", "readinessProbe", "livenessProbe"]) {
      const probe = c[kind];
      if (!probe) { problem(t.where, `rank 0 has no ${kind}`); continue; }
      const port = probe.grpc?.port ?? probe.tcpSocket?.port ?? probe.httpGet?.port;
      if (probe.grpc || grpcPorts.has(port)) {
        problem(t.where, `${kind} on the gRPC port ${port}: rank 0 answers there only after the rendezvous with the other ranks, which need its name (a Service publishing only ready pods never lets them join) — probe /metrics, served from the process's start`);
      } else if (!(probe.httpGet?.path === "/metrics" && [metricsPort?.name, metricsPort?.containerPort].includes(port))) {
        problem(t.where, `${kind} should be httpGet /metrics on the metrics port (served from the process's start)`);
      }
    }
    // The pretrain init container serves /metrics on the scraped port while
    // it runs, or the pod's target is down (RlvrLearnerDown) while it
    // pretrains; one that holds a GPU trains on it.
    const annotatedPort = t.tpl?.metadata?.annotations?.["prometheus.io/port"] ?? String(metricsPort?.containerPort ?? "");
    for (const ic of (ps.initContainers ?? []).filter((x) => /rlvr pretrain/.test(cmdline(x)))) {
      const iw = `${t.where} init container "${ic.name}"`;
      if (flagValue(ic, "metrics_port") !== annotatedPort || flagValue(ic, "metrics_bind") !== "0.0.0.0") {
        problem(iw, `does not serve /metrics on port ${annotatedPort} (--metrics_port=${annotatedPort} --metrics_bind=0.0.0.0): the pod's target is down while it pretrains, and RlvrLearnerDown fires on every fresh deploy`);
      }
      if (ic.resources?.limits?.["nvidia.com/gpu"]) {
        const set = flagValue(ic, "set=pretrain.device") ?? (cmdline(ic).match(/--set=pretrain\.device=(\S+)/) ?? [])[1];
        const cmName = (ps.volumes ?? []).find((v) => v.configMap && (ic.volumeMounts ?? []).some((m) => m.name === v.name))?.configMap?.name;
        const cm = byKind("ConfigMap").find((d) => d.obj.metadata?.name === cmName);
        let device = set;
        if (device === undefined && cm?.obj.data?.["config.yaml"] !== undefined) {
          device = YAML.parse(cm.obj.data["config.yaml"])?.pretrain?.device;
        }
        if (!/^cuda(:\d+)?$/.test(device ?? "")) {
          problem(iw, `holds a GPU but pretrains on pretrain.device ${device ?? "(unset: auto)"}: set pretrain.device: cuda in the run config (auto falls back to the CPU without a word when the image has no CUDA)`);
        }
      }
    }
  }

  // Actors dial rank 0's stable name; TLS on both sides or neither.
  for (const t of templates.filter((x) => x.role === "actor")) {
    const c = t.tpl?.spec?.containers?.[0] ?? {};
    const flag = flagValue(c, "learner");
    if (!flag) { problem(t.where, "actor has no --learner= flag"); continue; }
    const host = flag.split(":")[0];
    if (learners.length && !(host === rank0?.dns || host.startsWith(`${rank0?.dns}.`))) {
      problem(t.where, `--learner host "${host}" is not rank 0's stable name ${rank0?.dns || "(no rank 0 in the rendered set)"}`);
    }
    if (rank0) {
      const lc = rank0.tpl?.spec?.containers?.[0] ?? {};
      if (!!flagValue(c, "tls_ca") !== !!flagValue(lc, "tls_cert")) problem(t.where, "TLS on one side only: actor --tls_ca and rank 0 --tls_cert must be set together");
    }
  }

  // ServiceMonitors: kube-prometheus-stack's Prometheus selects them by the
  // label release=<helm release name>.
  for (const { obj, where } of byKind("ServiceMonitor")) {
    if (!obj.metadata?.labels?.release) problem(where, "no `release` label: kube-prometheus-stack's Prometheus selects ServiceMonitors by release=<its Helm release name> and would ignore this one");
    for (const ep of obj.spec?.endpoints ?? []) {
      if (ep.filterRunning === false) problem(where, "endpoint filterRunning: false keeps the targets of pods that Succeeded or Failed: the completed learner Job's pod would be `up == 0` (RlvrLearnerDown after every run)");
    }
  }

  // NetworkPolicy: the learner's gRPC port is open to actors only.
  {
    const pols = byKind("NetworkPolicy").filter((d) => d.obj.spec?.podSelector?.matchLabels?.["app.kubernetes.io/component"] === "learner");
    if (learners.length && !pols.length) problem(label, "no NetworkPolicy selects the learner pods");
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
