#!/usr/bin/env node
// Many short-lived streams from a foreign client (Node's @grpc/grpc-js,
// default options) against rlvr_front_door_server, in rounds, with the
// server's memory sampled before each round, at its peak and after every
// stream (and the round's connection) is gone. It tells a one-time
// high-water mark (rounds 2..R end where round 1 ended) from a leak (each
// round ends higher).
//
// Modes, each round opening --n streams on a fresh channel (one HTTP/2
// connection) that is closed at the end of the round:
//   no_hello_cancel    Session streams that never send Hello, cancelled by
//                      the client once the server holds them;
//   no_hello_deadline  the same, ended by the server's Hello deadline
//                      (DEADLINE_EXCEEDED; run the server with a short
//                      --hello_timeout_s);
//   hello_cancel       Session streams that send Hello, get Welcome, then
//                      are cancelled;
//   weights_cancel     WatchWeights streams cancelled mid-transfer, once
//                      the server has registered every one (run the server
//                      with weights of several chunks).
// Streams beyond the server's max_sessions are refused RESOURCE_EXHAUSTED
// at once and counted as "refused".
//
// The server's figures come from its --stats_file: SIGUSR1 makes it write
// VmRSS, VmHWM, its thread count, glibc's mallinfo2 and its stream counts
// there; SIGUSR2 does the same after malloc_trim(0) (--trim_at_end: a
// measurement of what a trim would return). Prints one JSON line per round
// ("round") and a last one ("summary").
//   node streams.js --target 127.0.0.1:PORT --proto_dir DIR --pid PID --stats_file F
//        [--mode no_hello_cancel] [--n 1000] [--rounds 5] [--settle_ms 300]
//        [--release_wait_ms 2000] [--trim_at_end 0|1]
// After a round's streams are gone it waits --settle_ms, then up to
// --release_wait_ms for the server to return freed memory (its count of
// releases moves) before it takes the "after" figures.
"use strict";
const fs = require("node:fs");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const MODES = ["no_hello_cancel", "no_hello_deadline", "hello_cancel", "weights_cancel"];

function parseArgs(argv) {
  const out = { mode: "no_hello_cancel", n: 1000, rounds: 5, settle_ms: 300, trim_at_end: 0,
                release_wait_ms: 2000 };
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, "")] = argv[i + 1];
  for (const k of ["n", "rounds", "settle_ms", "trim_at_end", "pid", "release_wait_ms"]) {
    out[k] = Number(out[k]);
  }
  if (!out.target || !out.proto_dir || !out.pid || !out.stats_file) {
    throw new Error("--target, --proto_dir, --pid and --stats_file are required");
  }
  for (const m of out.mode.split(",")) {
    if (!MODES.includes(m)) throw new Error("unknown --mode " + m);
  }
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Asks the server for its figures (SIGUSR1, or SIGUSR2 to trim first) and
// waits for the file it writes.
async function serverStats(args, signal = "SIGUSR1") {
  try { fs.unlinkSync(args.stats_file); } catch (e) { /* not there yet */ }
  process.kill(args.pid, signal);
  const t0 = Date.now();
  for (;;) {
    try {
      return JSON.parse(fs.readFileSync(args.stats_file, "utf8"));
    } catch (e) {
      if (Date.now() - t0 > 5000) throw new Error("no stats from server pid " + args.pid);
      await sleep(5);
    }
  }
}

async function waitFor(pred, ms, what) {
  const t0 = Date.now();
  for (;;) {
    if (await pred()) return;
    if (Date.now() - t0 > ms) throw new Error("timed out waiting for " + what);
    await sleep(20);
  }
}

const MB = (kb) => Math.round(kb / 102.4) / 10;

async function round(args, pkg, mode, r) {
  const creds = grpc.credentials.createInsecure();
  const weights = mode === "weights_cancel";
  const client = weights ? new pkg.rlvr.v1.WeightService(args.target, creds)
                         : new pkg.rlvr.v1.SessionService(args.target, creds);
  // Connected before the baseline, so that it holds the connection.
  await new Promise((resolve, reject) => client.waitForReady(Date.now() + 10000,
    (e) => (e ? reject(e) : resolve())));
  const before = await serverStats(args);
  const t0 = Date.now();
  const calls = [];
  const codes = {};
  let ended = 0;
  let refused = 0;
  let held = 0;  // Streams the server serves: welcomed, or sent a chunk.
  let timedOut = 0;  // Ended by the Hello deadline.
  for (let i = 0; i < args.n; i++) {
    const c = { ended: false, held: false, code: null };
    c.call = weights ? client.WatchWeights({ have_version: 0, watcher_id: "streams" + i })
                     : client.Session();
    c.call.on("data", (m) => {
      if (!c.held && (weights || m.welcome)) { c.held = true; held++; }
    });
    c.call.on("error", (e) => { c.code = e.code; });
    c.call.on("status", (s) => {
      c.ended = true;
      ended++;
      codes[s.code] = (codes[s.code] || 0) + 1;
      if (s.code === grpc.status.RESOURCE_EXHAUSTED) refused++;
      if (s.code === grpc.status.DEADLINE_EXCEEDED) timedOut++;
    });
    if (mode === "hello_cancel") {
      c.call.write({ hello: { actor_id: "streams", incarnation: "s" + process.pid + "_" + i,
                              capacity: 1, batch_messages: true } });
    }
    calls.push(c);
  }
  // Every stream reached the handler: refused, held by the server (or, for
  // Hello-less ones, already ended by the Hello deadline).
  const expected = async () => {
    // Watchers count once registered; their transfers are then under way
    // (a whole version is n x 4 MiB: none finishes before the cancel).
    if (weights) return (await serverStats(args)).watchers + refused === args.n;
    if (mode === "hello_cancel") return held + refused === args.n;
    const s = await serverStats(args);
    return s.awaiting_hello + refused + timedOut === args.n;
  };
  await waitFor(expected, 20000, mode + " streams to reach the server");
  const peak = await serverStats(args);
  const opened_ms = Date.now() - t0;
  if (mode === "no_hello_deadline") {
    await waitFor(() => ended === args.n, 60000, "the Hello deadline to end every stream");
  } else {
    for (const c of calls) if (!c.ended) c.call.cancel();
  }
  await waitFor(() => ended === args.n, 20000, "every stream to end on the client");
  let gone = null;  // The server's figures once it freed every stream.
  await waitFor(async () => {
    const s = await serverStats(args);
    if (s.live_streams === 0 && s.awaiting_hello === 0 && s.open_sessions === 0 &&
        s.watchers === 0) gone = s;
    return gone !== null;
  }, 20000, "the server to free every stream");
  client.close();
  await sleep(args.settle_ms);  // The connection's teardown.
  // A server that returns freed memory after a burst (SessionServiceOptions
  // memory_trim) does it once the burst is over: the figures after it.
  let after = await serverStats(args);
  const tw = Date.now();
  while (after.releases === gone.releases && Date.now() - tw < args.release_wait_ms) {
    await sleep(50);
    after = await serverStats(args);
  }
  const out = { round: r, mode, n: args.n, refused, held: args.n - refused, codes,
                released: after.releases - gone.releases,
                received: held,
                opened_ms, total_ms: Date.now() - t0,
                rss_kb: { before: before.rss_kb, peak: peak.rss_kb, after: after.rss_kb },
                in_use_kb: { before: before.malloc.in_use_kb, peak: peak.malloc.in_use_kb,
                             after: after.malloc.in_use_kb },
                free_kb: { before: before.malloc.free_kb, peak: peak.malloc.free_kb,
                           after: after.malloc.free_kb },
                threads: { before: before.threads, peak: peak.threads, after: after.threads },
                hwm_kb: after.hwm_kb };
  console.log(JSON.stringify(out));
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const def = protoLoader.loadSync(["rlvr/v1/session.proto", "rlvr/v1/weights.proto"],
    { includeDirs: [args.proto_dir], keepCase: true, longs: String, enums: String,
      defaults: true, oneofs: true });
  const pkg = grpc.loadPackageDefinition(def);
  const start = await serverStats(args);
  // Per round: its modes one after the other; the round's figures are the
  // highest peak and the state after its last mode.
  const rounds = [];
  for (let r = 1; r <= args.rounds; r++) {
    const subs = [];
    for (const mode of args.mode.split(",")) subs.push(await round(args, pkg, mode, r));
    rounds.push({ peak: Math.max(...subs.map((x) => x.rss_kb.peak)), last: subs[subs.length - 1] });
  }
  const summary = { summary: true, ok: true, mode: args.mode, n: args.n, rounds: args.rounds,
                    start_rss_mb: MB(start.rss_kb),
                    peak_rss_mb: rounds.map((x) => MB(x.peak)),
                    after_rss_mb: rounds.map((x) => MB(x.last.rss_kb.after)),
                    after_in_use_mb: rounds.map((x) => MB(x.last.in_use_kb.after)),
                    after_free_mb: rounds.map((x) => MB(x.last.free_kb.after)),
                    released: rounds.map((x) => x.last.released) };
  if (args.trim_at_end) {
    const t = await serverStats(args, "SIGUSR2");
    summary.trimmed = { rss_kb: t.rss_kb, in_use_kb: t.malloc.in_use_kb,
                        free_kb: t.malloc.free_kb, trim_us: t.trim_us };
  }
  console.log(JSON.stringify(summary));
  setTimeout(() => process.exit(0), 50);
}

main().catch((e) => {
  console.log(JSON.stringify({ summary: true, ok: false, error: String(e && e.message ? e.message : e) }));
  process.exit(1);
});
