#!/usr/bin/env node
// A synthetic rlvr actor on @grpc/grpc-js: holds one session and answers
// every lease after --gen_ms with a valid group sampled "with" the newest
// version it was told of. No model: it exists to be a real process that a
// test can SIGSTOP (a hung actor) next to a working one
// (front_door_process_test, HungActor...). Runs until killed.
//   node actor.js --target HOST:PORT --proto_dir DIR [--capacity 4] [--gen_ms 20] [--id NAME]
"use strict";
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const args = { capacity: 4, gen_ms: 20, id: "synthetic" };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, "")] = argv[i + 1];
const def = protoLoader.loadSync(["rlvr/v1/session.proto"],
  { includeDirs: [args.proto_dir], keepCase: true, longs: String, enums: String, defaults: true,
    oneofs: true });
const pkg = grpc.loadPackageDefinition(def);
const client = new pkg.rlvr.v1.SessionService(args.target, grpc.credentials.createInsecure(),
  { "grpc.keepalive_time_ms": 10000, "grpc.keepalive_permit_without_calls": 1 });
let version = "0";
let answered = 0;
const session = client.Session();
const answer = (lease) => setTimeout(() => {
  session.write({ group: {
    lease_id: lease.lease_id, prompt_id: lease.prompt_id, policy_version: version,
    completions: Array.from({ length: lease.group_size }, (_, i) => ({
      token_ids: [3, 2], behaviour_logprobs: [-1.0, -0.25], reward: i % 2 === 0 ? 1 : 0,
      finish_reason: "FINISH_REASON_STOP" })) } });
  answered++;
}, Number(args.gen_ms));
session.on("data", (m) => {
  if (m.welcome) version = m.welcome.latest_version;
  if (m.weights_available) version = m.weights_available.version;
  if (m.lease) answer(m.lease);
  if (m.lease_batch) m.lease_batch.leases.forEach(answer);
});
session.on("error", (e) => { console.log(`actor ${args.id}: session ended ${e.code} ${e.details}`); process.exit(1); });
session.on("end", () => { console.log(`actor ${args.id}: session ended`); process.exit(1); });
session.write({ hello: { actor_id: args.id, incarnation: args.id + process.pid,
                         capacity: Number(args.capacity), batch_messages: true } });
setInterval(() => console.log(`actor ${args.id}: answered ${answered}`), 1000);
