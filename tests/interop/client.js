#!/usr/bin/env node
// An rlvr actor-side client on Node's @grpc/grpc-js (a different gRPC
// implementation than the learner's), with default options except keepalive:
// default 4 MiB receive limit, no compression. It checks health, opens a
// session (Hello, Welcome, leases, a group answered and accepted), watches
// weights (one whole version, checked chunk by chunk and whole against its
// CRC-32s), then holds the session and the weight stream idle for --idle_s
// with keepalive pings every --keepalive_ms, and proves both still work:
// the session answers its leases and gets a group accepted, the health check
// passes, the weight stream is still open. Prints one JSON line; exit 0 when
// every check held.
//   node client.js --target 127.0.0.1:PORT --proto_dir DIR [--idle_s 20]
//        [--keepalive_ms 10000] [--min_weight_bytes N] [--token T]
"use strict";
const path = require("node:path");
const zlib = require("node:zlib");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

function parseArgs(argv) {
  const out = { idle_s: 20, keepalive_ms: 10000, min_weight_bytes: 1, token: "" };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "");
    out[key] = argv[i + 1];
  }
  out.idle_s = Number(out.idle_s);
  out.keepalive_ms = Number(out.keepalive_ms);
  out.min_weight_bytes = Number(out.min_weight_bytes);
  if (!out.target || !out.proto_dir) throw new Error("--target and --proto_dir are required");
  return out;
}

// CRC-32 (zlib polynomial), incremental: crc32(buf, previous).
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();
function crc32(buf, prev = 0) {
  if (typeof zlib.crc32 === "function") return zlib.crc32(buf, prev) >>> 0;
  let c = (prev ^ 0xffffffff) >>> 0;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const def = protoLoader.loadSync(
    ["rlvr/v1/session.proto", "rlvr/v1/weights.proto", "grpc/health/v1/health.proto"],
    { includeDirs: [args.proto_dir], keepCase: true, longs: String, enums: String,
      defaults: true, oneofs: true });
  const pkg = grpc.loadPackageDefinition(def);
  // Default options (4 MiB receive limit, no compression) plus keepalive.
  const options = {
    "grpc.keepalive_time_ms": args.keepalive_ms,
    "grpc.keepalive_timeout_ms": 5000,
    "grpc.keepalive_permit_without_calls": 1,
  };
  const creds = grpc.credentials.createInsecure();
  const sessionClient = new pkg.rlvr.v1.SessionService(args.target, creds, options);
  const weightClient = new pkg.rlvr.v1.WeightService(args.target, creds, options);
  const health = new pkg.grpc.health.v1.Health(args.target, creds, options);
  const md = new grpc.Metadata();
  if (args.token) md.set("authorization", "Bearer " + args.token);
  const result = { ok: false, checks: {} };
  const fail = (msg) => { throw new Error(msg); };

  const healthCheck = () => new Promise((resolve, reject) =>
    health.Check({ service: "" }, (err, res) => (err ? reject(err) : resolve(res.status))));
  result.checks.health_before = await healthCheck();
  if (result.checks.health_before !== "SERVING") fail("health: " + result.checks.health_before);

  // --- Session.
  const leases = [];
  const acks = [];
  let welcome = null;
  let latestVersion = "0";
  let sessionError = null;
  let sessionEnded = false;
  const session = sessionClient.Session(md);
  session.on("data", (m) => {
    if (m.welcome) { welcome = m.welcome; latestVersion = m.welcome.latest_version; }
    if (m.weights_available) latestVersion = m.weights_available.version;
    if (m.lease) leases.push(m.lease);
    if (m.lease_batch) leases.push(...m.lease_batch.leases);
    if (m.ack) acks.push(m.ack);
    if (m.ack_batch) acks.push(...m.ack_batch.acks);
  });
  session.on("error", (e) => { sessionError = e; });
  session.on("end", () => { sessionEnded = true; });
  session.write({ hello: { actor_id: "grpc-js-interop", incarnation: "grpcjs" + process.pid,
                           capacity: 2, have_version: 0, batch_messages: true } });
  const waitUntil = async (pred, ms, what) => {
    const t0 = Date.now();
    while (!pred()) {
      if (sessionError) fail(what + ": session error " + sessionError.code + " " + sessionError.details);
      if (Date.now() - t0 > ms) fail("timed out waiting for " + what);
      await sleep(10);
    }
  };
  await waitUntil(() => welcome && leases.length >= 2, 10000, "welcome and 2 leases");
  result.checks.welcome = { max_capacity: welcome.max_capacity, capacity: welcome.capacity,
                            max_message_bytes: welcome.max_message_bytes };
  const groupFor = (lease) => ({
    lease_id: lease.lease_id, prompt_id: lease.prompt_id, policy_version: latestVersion,
    completions: Array.from({ length: lease.group_size }, (_, i) => ({
      token_ids: [3, 2], behaviour_logprobs: [-1.0, -0.25], reward: i % 2 === 0 ? 1 : 0,
      finish_reason: "FINISH_REASON_STOP" })) });
  const answer = async (lease, what) => {
    const before = acks.length;
    session.write({ group: groupFor(lease) });
    await waitUntil(() => acks.length > before, 10000, what);
    return acks[acks.length - 1];
  };
  const first = await answer(leases.shift(), "the first ack");
  if (!first.accepted) fail("first group rejected: " + first.reason + " " + first.detail);
  result.checks.first_group_accepted = true;

  // --- WatchWeights: one whole version through the default 4 MiB limit.
  let weightError = null;
  let weightEnded = false;
  const version = { bytes: 0, chunks: 0, crc: 0, blobCrcOk: null, done: false, version: null };
  const t0 = Date.now();
  const watch = weightClient.WatchWeights({ have_version: 0, watcher_id: "grpc-js-interop" }, md);
  watch.on("data", (c) => {
    if (version.done) return;  // Later versions: the stream is only kept open.
    if (version.version === null) version.version = c.version;
    if (c.version !== version.version || Number(c.offset) !== version.bytes) {
      weightError = new Error("chunk out of order: version " + c.version + " offset " + c.offset);
      return;
    }
    if (crc32(c.data) !== c.chunk_crc32) weightError = new Error("chunk CRC mismatch at " + c.offset);
    version.crc = crc32(c.data, version.crc);
    version.bytes += c.data.length;
    version.chunks++;
    version.maxChunk = Math.max(version.maxChunk || 0, c.data.length);
    if (c.last) {
      version.done = true;
      version.total = Number(c.total_bytes);
      version.blobCrcOk = version.crc === c.blob_crc32;
      version.seconds = (Date.now() - t0) / 1000;
    }
  });
  watch.on("error", (e) => { weightError = e; });
  watch.on("end", () => { weightEnded = true; });
  const tw = Date.now();
  while (!version.done) {
    if (weightError) fail("weights: " + (weightError.details || weightError.message));
    if (Date.now() - tw > 600000) fail("timed out waiting for a whole weight version");
    await sleep(20);
  }
  if (!version.blobCrcOk) fail("blob CRC mismatch");
  if (version.bytes !== version.total) fail("blob size " + version.bytes + " != " + version.total);
  if (version.bytes < args.min_weight_bytes) fail("weights too small: " + version.bytes);
  result.checks.weights = { version: version.version, bytes: version.bytes, chunks: version.chunks,
                            max_chunk_bytes: version.maxChunk, seconds: version.seconds,
                            crc_ok: true };

  // --- Idle: the session and the weight stream stay open, keepalive pings flow.
  const idleStart = Date.now();
  while (Date.now() - idleStart < args.idle_s * 1000) {
    if (sessionError || sessionEnded) fail("session ended while idle: " +
        (sessionError ? sessionError.code + " " + sessionError.details : "end"));
    if (weightError || weightEnded) fail("weight stream ended while idle: " +
        (weightError ? weightError.code + " " + weightError.details : "end"));
    await sleep(200);
  }
  result.checks.idle_s = args.idle_s;

  // --- After the idle time: answer the leases held (they may have expired:
  // any Ack proves the session), then a lease granted after that must be
  // accepted.
  const held = leases.splice(0);
  result.checks.after_idle_held_acks = [];
  for (const lease of held) {
    const late = await answer(lease, "the ack after idle");
    result.checks.after_idle_held_acks.push(late.accepted ? "accepted" : late.reason);
  }
  const live = () => leases.findIndex((l) => Number(l.deadline_unix_ms) > Date.now() + 2000);
  await waitUntil(() => live() >= 0, 10000, "a new lease after idle");
  const fresh = await answer(leases.splice(live(), 1)[0], "the ack of a fresh lease");
  if (!fresh.accepted) fail("fresh group rejected: " + fresh.reason + " " + fresh.detail);
  result.checks.after_idle_group_accepted = true;
  if (weightError || weightEnded) fail("weight stream ended");
  result.checks.health_after = await healthCheck();
  if (result.checks.health_after !== "SERVING") fail("health after: " + result.checks.health_after);

  session.end();
  watch.cancel();
  result.ok = true;
  console.log(JSON.stringify(result));
  sessionClient.close();
  weightClient.close();
  health.close();
  setTimeout(() => process.exit(0), 100);
}

main().catch((e) => {
  console.log(JSON.stringify({ ok: false, error: String(e && e.message ? e.message : e) }));
  process.exit(1);
});
