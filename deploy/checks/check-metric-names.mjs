#!/usr/bin/env node
// Checks that every metric named in the PromQL of Grafana dashboards and
// Prometheus rule files exists in the metric contract
// (deploy/checks/metrics-contract.txt), with the right type for how it is used
// (rate/increase only on counters and histogram series; _bucket/_sum/_count
// only on histograms), and that every recording rule used is defined.
// With --scrape FILE (repeatable; Prometheus text exposition, e.g. a real
// /metrics of `rlvr learner` and `rlvr actor`), every such metric must also be
// exported by the scraped processes, as a family of the contract's type.
// Usage: check-metric-names.mjs [--contract F] [--scrape F]... FILE.json|FILE.yml...
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
let contractFile = path.join(here, "metrics-contract.txt");
const scrapes = [];
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--contract") contractFile = args[++i];
  else if (args[i] === "--scrape") scrapes.push(args[++i]);
  else files.push(args[i]);
}
if (!files.length) {
  console.error("usage: check-metric-names.mjs [--contract F] [--scrape F]... FILE...");
  process.exit(2);
}

const contract = new Map(); // name -> type
for (const line of fs.readFileSync(contractFile, "utf8").split("\n")) {
  const t = line.trim();
  if (!t || t.startsWith("#")) continue;
  const [name, type] = t.split(/\s+/);
  contract.set(name, type);
}
contract.set("up", "gauge"); // Prometheus' own scrape health

// Collects {expr, where} from dashboards (targets[].expr) and rule files.
const exprs = [];
const records = new Set();
for (const file of files) {
  const base = path.basename(file);
  const text = fs.readFileSync(file, "utf8");
  if (file.endsWith(".json")) {
    let dash;
    try { dash = JSON.parse(text); } catch (e) { exprs.push({ error: `${base}: not JSON: ${e.message}` }); continue; }
    const walk = (panels) => {
      for (const p of panels ?? []) {
        walk(p.panels);
        for (const t of p.targets ?? []) {
          if (t.expr !== undefined) exprs.push({ expr: t.expr, where: `${base} panel "${p.title}" ${t.refId}` });
        }
      }
    };
    walk(dash.panels);
  } else {
    const doc = YAML.parse(text);
    for (const g of doc?.groups ?? []) {
      for (const r of g.rules ?? []) {
        if (r.record) records.add(r.record);
        exprs.push({ expr: String(r.expr ?? ""), where: `${base} ${r.alert ? `alert ${r.alert}` : `record ${r.record}`}` });
      }
    }
  }
}

// The metric names of a PromQL expression: identifiers outside strings, label
// matchers, ranges and grouping clauses that are not functions or keywords.
const KEYWORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool",
  "and", "or", "unless", "offset", "inf", "nan", "atan2", "start", "end"]);
function metricNames(expr) {
  let e = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  e = e.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  e = e.replace(/\{[^}]*\}/g, " ").replace(/\[[^\]]*\]/g, " ");
  const out = [];
  for (const m of e.matchAll(/(?<![\w:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (m[2]) continue; // a function call
    if (KEYWORDS.has(m[1].toLowerCase())) continue;
    if (/^\d/.test(m[1])) continue;
    out.push(m[1]);
  }
  return out;
}
// rate/increase/irate/delta arguments.
function ratedNames(expr) {
  const e = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...e.matchAll(/\b(?:rate|irate|increase)\s*\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)/g)].map((m) => m[1]);
}

// Resolves a series name to [contract family, its type] or an error.
function resolve(name) {
  if (contract.has(name)) return { family: name, type: contract.get(name) };
  const m = name.match(/^(.*)_(bucket|sum|count)$/);
  if (m && contract.get(m[1]) === "histogram") return { family: m[1], type: "histogram", part: m[2] };
  if (m && contract.has(m[1])) return { error: `"${name}": ${m[1]} is a ${contract.get(m[1])}, not a histogram` };
  return { error: `"${name}" is not in the metric contract (${path.basename(contractFile)})` };
}

const problems = [];
const used = new Set();
for (const x of exprs) {
  if (x.error) { problems.push(x.error); continue; }
  if (!x.expr.trim()) { problems.push(`${x.where}: empty expression`); continue; }
  for (const name of metricNames(x.expr)) {
    if (name.includes(":")) {
      if (!records.has(name)) problems.push(`${x.where}: recording rule "${name}" is not defined in the given rule files`);
      continue;
    }
    const r = resolve(name);
    if (r.error) problems.push(`${x.where}: ${r.error}`);
    else used.add(r.family);
  }
  for (const name of ratedNames(x.expr)) {
    const r = resolve(name);
    if (!r.error && r.type !== "counter" && !(r.type === "histogram" && r.part)) {
      problems.push(`${x.where}: rate/increase of "${name}", a ${r.type}`);
    }
  }
}

// Live exposition: families by "# TYPE" lines, plus sample names.
if (scrapes.length) {
  const families = new Map();
  for (const f of scrapes) {
    for (const line of fs.readFileSync(f, "utf8").split("\n")) {
      const t = line.match(/^# TYPE (\S+) (\S+)/);
      if (t) families.set(t[1], t[2]);
      else if (line && !line.startsWith("#")) {
        const n = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)/)?.[1];
        if (n && !families.has(n) && !/_(bucket|sum|count)$/.test(n)) families.set(n, "untyped");
      }
    }
  }
  for (const name of [...used].sort()) {
    if (name === "up") continue;
    if (!families.has(name)) problems.push(`"${name}" is used by deploy/ but not exported by the scraped processes (${scrapes.map((s) => path.basename(s)).join(", ")})`);
    else if (families.get(name) !== contract.get(name)) problems.push(`"${name}" is exported as ${families.get(name)}, the contract says ${contract.get(name)}`);
  }
}

if (problems.length) {
  for (const p of problems) console.error(`FAIL ${p}`);
  console.error(`check-metric-names: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`check-metric-names: ${exprs.length} expressions use ${used.size} metrics, all in the contract` +
  (scrapes.length ? " and in the live scrape" : ""));
