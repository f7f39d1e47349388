// Expected ids of tests/data/tokenizer/corpus.jsonl for the real Qwen3 and
// Llama-3 tokenizers, computed with @lenml/tokenizers (a JavaScript port of
// Hugging Face tokenizers). Run by scripts/tokenizer-fixtures.
//
// Hugging Face (Rust, Oniguruma) is the contract. The port differs on the
// pre-tokenizer regex: JavaScript's \s includes U+FEFF and lacks U+0085, and
// the port rewrites (?i:'s|...) as [sS]... (no U+017F LONG S). Every row is
// therefore also encoded with the Split pattern rewritten to Oniguruma's
// semantics (the explicit White_Space class for \s, and [sS\u017F]); rows
// where the two differ take the rewritten answer and are listed with the
// reason in overrides.jsonl.
"use strict";
const fs = require("fs");
const path = require("path");

const [modules, outDir] = process.argv.slice(2);
const { TokenizerLoader } = require(path.join(modules, "@lenml/tokenizers"));

// Oniguruma's Unicode \s (the White_Space property) as a JS class body.
const ONIG_SPACE = "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const CONTRACTIONS = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
const CONTRACTIONS_ONIG = "(?:'(?:[sS\\u017F]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))";

function onigPattern(p) {
  p = p.split(CONTRACTIONS).join(CONTRACTIONS_ONIG);
  let out = "";
  let inClass = false;
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === "\\") {
      const e = p[++i];
      if (e === "s") out += inClass ? ONIG_SPACE : `[${ONIG_SPACE}]`;
      else if (e === "S") {
        if (inClass) throw new Error("\\S inside a class");
        out += `[^${ONIG_SPACE}]`;
      } else out += c + e;
      continue;
    }
    if (c === "[") inClass = true;
    else if (c === "]") inClass = false;
    out += c;
  }
  return out;
}

function load(dir, patch) {
  const json = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const config = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  if (patch) {
    for (const p of json.pre_tokenizer.pretokenizers || []) {
      if (p.type === "Split" && p.pattern.Regex) p.pattern.Regex = onigPattern(p.pattern.Regex);
    }
  }
  return TokenizerLoader.fromPreTrained({ tokenizerJSON: json, tokenizerConfig: config });
}

function reasons(text) {
  const r = [];
  if (text.includes("\u0085")) r.push("U+0085 is in Oniguruma's \\s (White_Space) but not in JavaScript's");
  if (text.includes("\ufeff")) r.push("U+FEFF is in JavaScript's \\s but not in Oniguruma's");
  if (text.includes("\u017f")) r.push("(?i:'s) matches 'U+017F (LONG S, case-folds to s) in Oniguruma; the port's [sS] does not");
  return r.length ? r.join("; ") : "pre-tokenizer regex semantics (see docs/tokenizer.md)";
}

const corpus = fs
  .readFileSync(path.join(outDir, "corpus.jsonl"), "utf8")
  .split("\n")
  .filter((l) => l.length > 0)
  .map((l) => JSON.parse(l).text);

const overrides = [];
for (const [name, pkg] of [["qwen3", "tokenizer-qwen3"], ["llama3", "tokenizer-llama3"]]) {
  const dir = path.join(modules, "@lenml", pkg, "models");
  const port = load(dir, false);
  const onig = load(dir, true);
  const lines = [];
  corpus.forEach((text, row) => {
    const a = port.encode(text, { add_special_tokens: false });
    const b = onig.encode(text, { add_special_tokens: false });
    if (JSON.stringify(a) !== JSON.stringify(b)) {
      overrides.push({ model: name, row, reason: reasons(text), port_ids: a, hf_ids: b });
    }
    lines.push(JSON.stringify({ row, ids: b }));
  });
  fs.writeFileSync(path.join(outDir, `expected-${name}.jsonl`), lines.join("\n") + "\n");
  console.log(`${name}: ${corpus.length} rows`);
}
fs.writeFileSync(
  path.join(outDir, "overrides.jsonl"),
  overrides.map((o) => JSON.stringify(o)).join("\n") + (overrides.length ? "\n" : ""),
);
console.log(`overrides: ${overrides.length} rows`);
