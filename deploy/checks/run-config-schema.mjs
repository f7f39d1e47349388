// The run-config schema as registered in common/config/run_config.cc
// (DescribeRunConfig: s->Int("model.d_model", &m.d_model, 8, 8192, "...")),
// read from the C++ source so that deployment configs are checked against the
// same keys, types, ranges and enum values the `rlvr` loader enforces, without
// building the binary. When RLVR_BINARY exists and its loader can be asked
// directly, check-run-config.mjs also does that.

import fs from "node:fs";
import YAML from "yaml";

const CONSTANTS = { kBig: 2147483647, kSeedMax: 9223372036854775807, kHuge: 1e30 };

// Splits the text of a call's arguments at top-level commas.
function splitArgs(text) {
  const out = [];
  let depth = 0, cur = "", str = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (str) {
      cur += ch;
      if (ch === "\\") { cur += text[++i]; continue; }
      if (ch === '"') str = false;
      continue;
    }
    if (ch === '"') { str = true; cur += ch; continue; }
    if ("({[".includes(ch)) depth++;
    if (")}]".includes(ch)) depth--;
    if (ch === "," && depth === 0) { out.push(cur.trim()); cur = ""; continue; }
    cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

// Evaluates a C++ numeric bound like `8`, `1e-3`, `1 << 20`, `1LL << 31`,
// `kBig`; undefined when it is something else.
function evalBound(expr) {
  const e = expr.replace(/\b(\d+)(?:LL|L|ULL|U)\b/g, "$1").trim();
  if (/^-?[\d.]+(e[-+]?\d+)?$/i.test(e)) return Number(e);
  if (e in CONSTANTS) return CONSTANTS[e];
  const sh = e.match(/^(\d+)\s*<<\s*(\d+)$/);
  if (sh) return Number(sh[1]) * 2 ** Number(sh[2]);
  const neg = e.match(/^-(k\w+)$/);
  if (neg && neg[1] in CONSTANTS) return -CONSTANTS[neg[1]];
  return undefined;
}

// Returns Map path -> {type, min, max, allowed}.
export function loadRunConfigSchema(ccPath) {
  const src = fs.readFileSync(ccPath, "utf8");
  const schema = new Map();
  const re = /\bs->(Int|Int64|Double|Bool|String|Enum|IntList)\(/g;
  let m;
  while ((m = re.exec(src)) !== null) {
    let depth = 1, i = re.lastIndex, str = false;
    for (; i < src.length && depth > 0; i++) {
      const ch = src[i];
      if (str) { if (ch === "\\") i++; else if (ch === '"') str = false; continue; }
      if (ch === '"') str = true;
      else if (ch === "(") depth++;
      else if (ch === ")") depth--;
    }
    const a = splitArgs(src.slice(re.lastIndex, i - 1));
    const key = a[0]?.match(/^"([^"]+)"$/)?.[1];
    if (!key) continue;
    const entry = { type: m[1] };
    if (["Int", "Int64", "Double", "IntList"].includes(m[1])) {
      entry.min = evalBound(a[2] ?? "");
      entry.max = evalBound(a[3] ?? "");
    }
    if (m[1] === "Enum") entry.allowed = [...(a[2] ?? "").matchAll(/"([^"]*)"/g)].map((x) => x[1]);
    schema.set(key, entry);
  }
  // An earlier name of a key (s->Renamed("old", "new")) is checked as the new one.
  for (const r of src.matchAll(/\bs->Renamed\(\s*"([^"]+)"\s*,\s*"([^"]+)"\s*\)/g)) {
    if (schema.has(r[2])) schema.set(r[1], schema.get(r[2]));
  }
  if (schema.size < 10) throw new Error(`could not read the run-config schema from ${ccPath} (${schema.size} keys)`);
  return schema;
}

function checkValue(key, v, s) {
  const num = (x) => typeof x === "number" && Number.isFinite(x);
  const range = (x) => {
    if (s.min !== undefined && x < s.min) return `${key}: ${x} is below the minimum ${s.min}`;
    if (s.max !== undefined && x > s.max) return `${key}: ${x} is above the maximum ${s.max}`;
    return null;
  };
  switch (s.type) {
    case "Int": case "Int64":
      if (!num(v) || !Number.isInteger(v)) return `${key}: expected an integer, got ${JSON.stringify(v)}`;
      return range(v);
    case "Double":
      if (!num(v)) return `${key}: expected a number, got ${JSON.stringify(v)}`;
      return range(v);
    case "Bool":
      return typeof v === "boolean" ? null : `${key}: expected true or false, got ${JSON.stringify(v)}`;
    case "String":
      return typeof v === "string" || num(v) ? null : `${key}: expected a string, got ${JSON.stringify(v)}`;
    case "Enum":
      return s.allowed.includes(String(v)) ? null : `${key}: "${v}" is not one of ${s.allowed.join(" | ")}`;
    case "IntList":
      if (!Array.isArray(v) || !v.every((x) => Number.isInteger(x))) return `${key}: expected a list of integers`;
      for (const x of v) { const r = range(x); if (r) return r; }
      return null;
    default:
      return null;
  }
}

// Returns a list of problems (empty when the YAML text is a valid run config).
export function checkRunConfig(text, schema) {
  const doc = YAML.parseDocument(text);
  if (doc.errors.length) return [`YAML error: ${doc.errors[0].message}`];
  const root = doc.toJS() ?? {};
  if (typeof root !== "object" || Array.isArray(root)) return ["the run config must be a mapping"];
  const problems = [];
  const values = new Map();
  const walk = (obj, prefix) => {
    for (const [k, v] of Object.entries(obj)) {
      const key = prefix ? `${prefix}.${k}` : k;
      const s = schema.get(key);
      if (s) {
        const err = checkValue(key, v, s);
        if (err) problems.push(err);
        else values.set(key, v);
      } else if (v && typeof v === "object" && !Array.isArray(v) &&
                 [...schema.keys()].some((p) => p.startsWith(`${key}.`))) {
        walk(v, key);
      } else {
        problems.push(`unknown key "${key}" (not registered in common/config/run_config.cc)`);
      }
    }
  };
  walk(root, "");
  // Relations ValidateRunConfig enforces, with the header's defaults.
  const get = (k, d) => (values.has(k) ? values.get(k) : d);
  if (get("model.d_model", 128) % get("model.n_heads", 4) !== 0) {
    problems.push(`model.d_model ${get("model.d_model", 128)} is not divisible by model.n_heads ${get("model.n_heads", 4)}`);
  }
  if (get("task.min_digits", 1) > get("task.max_digits", 2)) {
    problems.push("task.min_digits is larger than task.max_digits");
  }
  return problems;
}
