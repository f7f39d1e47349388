#!/usr/bin/env node
// Type-checks a Grafana dashboard JSON against @grafana/schema with the
// TypeScript compiler: the dashboard model (Dashboard, Panel, RowPanel) and,
// per panel type, the panel plugin's Options/FieldConfig (timeseries, stat,
// heatmap). Object literals get TypeScript's excess-property check, so an
// unknown or misspelled field is an error, as is a wrong type or enum value.
// Prometheus targets must carry refId and a non-empty expr.
// Usage: check-dashboard.mjs DASHBOARD.json
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const file = process.argv[2];
if (!file) {
  console.error("usage: check-dashboard.mjs DASHBOARD.json");
  process.exit(2);
}
const problems = [];
let dash;
try {
  dash = JSON.parse(fs.readFileSync(file, "utf8"));
} catch (e) {
  console.error(`FAIL ${file}: not valid JSON: ${e.message}`);
  process.exit(1);
}

// Checks the types cannot express.
const ids = new Set();
const walk = (panels, where) => {
  for (const [i, p] of (panels ?? []).entries()) {
    const pw = `${where}panels[${i}] "${p.title ?? "?"}"`;
    if (ids.has(p.id)) problems.push(`${pw}: duplicate panel id ${p.id}`);
    ids.add(p.id);
    if (p.type === "row") { walk(p.panels, `${pw}.`); continue; }
    if (!Array.isArray(p.targets) || p.targets.length === 0) problems.push(`${pw}: no queries`);
    for (const [j, t] of (p.targets ?? []).entries()) {
      if (typeof t.expr !== "string" || !t.expr.trim()) problems.push(`${pw} targets[${j}]: empty expr`);
    }
  }
};
walk(dash.panels, "");

const header = `
import type { Dashboard, Panel, RowPanel, DataSourceRef } from "@grafana/schema";
import type * as TS from "@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen";
import type * as ST from "@grafana/schema/dist/esm/raw/composable/stat/panelcfg/x/StatPanelCfg_types.gen";
import type * as HM from "@grafana/schema/dist/esm/raw/composable/heatmap/panelcfg/x/HeatmapPanelCfg_types.gen";

// JSON holds enum members by value: map every enum type to its literal values.
type Lit<T> = T extends string ? \`\${T}\` : T extends number | boolean | null | undefined ? T
  : T extends Array<infer U> ? Array<Lit<U>> : T extends object ? { [K in keyof T]: Lit<T[K]> } : T;
// Grafana fills option defaults, so saved options may omit fields.
type DeepPartial<T> = T extends Array<infer U> ? Array<DeepPartial<U>>
  : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;

// A Prometheus query (the prometheus datasource's DataQuery).
interface PromTarget {
  refId: string;
  expr: string;
  datasource?: DataSourceRef;
  legendFormat?: string;
  range?: boolean;
  instant?: boolean;
  format?: "time_series" | "table" | "heatmap";
  editorMode?: "code" | "builder";
  interval?: string;
  hide?: boolean;
}
type TypedPanel<Type extends string, O, F> =
  Omit<Lit<Panel<O, F>>, "type" | "targets" | "options" | "fieldConfig"> & {
    type: Type;
    targets: PromTarget[];
    options: Lit<DeepPartial<O>>;
    fieldConfig: Omit<Lit<NonNullable<Panel["fieldConfig"]>>, "defaults"> & {
      defaults: Omit<Lit<NonNullable<Panel["fieldConfig"]>["defaults"]>, "custom"> & { custom?: Lit<DeepPartial<F>> };
    };
  };
type AnyPanel =
  | TypedPanel<"timeseries", TS.Options, TS.FieldConfig>
  | TypedPanel<"stat", ST.Options, {}>
  | TypedPanel<"heatmap", HM.Options, HM.FieldConfig>;
type Row = Omit<Lit<RowPanel>, "type" | "panels"> & { type: "row"; panels: AnyPanel[] };
type RlvrDashboard = Omit<Lit<Dashboard>, "panels"> & { panels: Array<AnyPanel | Row> };

export const dashboard: RlvrDashboard = `;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rlvr-dash-ts-"));
try {
  fs.symlinkSync(path.join(here, "node_modules"), path.join(dir, "node_modules"));
  const body = JSON.stringify(dash, null, 2);
  fs.writeFileSync(path.join(dir, "dashboard.ts"), header + body + ";\n");
  const offset = header.split("\n").length - 1;
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext",
                       target: "es2022", skipLibCheck: true, types: [] },
    files: ["dashboard.ts"],
  }));
  const tsc = path.join(here, "node_modules", "typescript", "bin", "tsc");
  const r = spawnSync(process.execPath, [tsc, "-p", dir, "--pretty", "false"], { encoding: "utf8", cwd: dir });
  if (r.status !== 0) {
    const src = body.split("\n");
    const out = (r.stdout + r.stderr).trim();
    if (!out) problems.push(`tsc failed with status ${r.status}`);
    for (const line of out.split("\n")) {
      const m = line.match(/dashboard\.ts\((\d+),\d+\): error (TS\d+): (.*)$/);
      if (!m) { if (line.trim() && !line.startsWith(" ")) problems.push(`tsc: ${line}`); continue; }
      const n = Number(m[1]) - offset; // 1-based line within the JSON
      const msg = m[3].length > 300 ? `${m[3].slice(0, 300)}...` : m[3];
      problems.push(`${path.basename(file)} line ${n}: \`${(src[n - 1] ?? "").trim()}\`: ${msg}`);
    }
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}

if (problems.length) {
  for (const p of problems) console.error(`FAIL ${p}`);
  console.error(`check-dashboard: ${problems.length} problem(s) in ${file}`);
  process.exit(1);
}
console.log(`check-dashboard: ${file}: ${ids.size} panels type-check against @grafana/schema`);
