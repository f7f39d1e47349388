#!/usr/bin/env node
// Checks run-config YAML files (the ConfigMap sources under deploy/k8s)
// against the schema registered in common/config/run_config.cc: known keys, types,
// ranges, enum values and the cross-field relations of ValidateRunConfig that
// the deployment configs touch. See run-config-schema.mjs.
// Usage: check-run-config.mjs [--run-config-cc F] CONFIG.yaml...
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadRunConfigSchema, checkRunConfig } from "./run-config-schema.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
let cc = path.resolve(here, "../../common/config/run_config.cc");
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--run-config-cc") cc = args[++i];
  else files.push(args[i]);
}
if (!files.length) {
  console.error("usage: check-run-config.mjs [--run-config-cc F] CONFIG.yaml...");
  process.exit(2);
}
const schema = loadRunConfigSchema(cc);
let bad = 0;
for (const f of files) {
  const problems = checkRunConfig(fs.readFileSync(f, "utf8"), schema);
  for (const p of problems) console.error(`FAIL ${f}: ${p}`);
  bad += problems.length;
}
if (bad) {
  console.error(`check-run-config: ${bad} problem(s)`);
  process.exit(1);
}
console.log(`check-run-config: ${files.length} file(s) valid against ${schema.size} keys of ${path.basename(cc)}`);
