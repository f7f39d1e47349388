#!/usr/bin/env node
// A client without credentials flooding the learner's front door (Node's
// @grpc/grpc-js, default options): Session streams that never say Hello,
// opened from several source addresses and reopened as soon as the server
// ends them, for as long as it runs. Each source address is a local TCP
// relay whose outgoing connections are bound to that address (any of
// 127.0.0.0/8 on Linux), so the server sees distinct peers on one host.
//   node flood.js --target 127.0.0.1:PORT --proto_dir DIR
//        [--addresses 127.0.0.2,127.0.0.3] [--per_address 20] [--run_s 30]
// Prints one JSON line per second: streams opened, held now (open, not
// ended), and how they ended, by gRPC status code name.
"use strict";
const net = require("node:net");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const args = { addresses: "127.0.0.2,127.0.0.3", per_address: 20, run_s: 30 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, "")] = argv[i + 1];
if (!args.target || !args.proto_dir) throw new Error("--target and --proto_dir are required");
const [host, port] = [args.target.slice(0, args.target.lastIndexOf(":")),
  Number(args.target.slice(args.target.lastIndexOf(":") + 1))];

// A relay listening on 127.0.0.1 whose connections to the target come from `source`.
function relay(source) {
  return new Promise((resolve, reject) => {
    const server = net.createServer((inbound) => {
      const outbound = net.connect({ host, port, localAddress: source });
      inbound.pipe(outbound).pipe(inbound);
      const close = () => { inbound.destroy(); outbound.destroy(); };
      inbound.on("error", close);
      outbound.on("error", close);
      inbound.on("close", close);
      outbound.on("close", close);
    });
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

const def = protoLoader.loadSync(["rlvr/v1/session.proto"],
  { includeDirs: [args.proto_dir], keepCase: true, longs: String, enums: String, defaults: true,
    oneofs: true });
const pkg = grpc.loadPackageDefinition(def);
const stats = { opened: 0, held: 0, ended: {} };
const codeName = (c) => Object.keys(grpc.status).find((k) => grpc.status[k] === c) || String(c);

function open(client) {
  stats.opened++;
  stats.held++;
  const call = client.Session();
  let done = false;
  const end = (code) => {
    if (done) return;
    done = true;
    stats.held--;
    stats.ended[codeName(code)] = (stats.ended[codeName(code)] || 0) + 1;
    setTimeout(() => open(client), 200);  // Reopen: the flood never lets up.
  };
  call.on("data", () => {});
  call.on("error", (e) => end(e.code));
  call.on("status", (s) => end(s.code));
}

(async () => {
  const sources = String(args.addresses).split(",").filter(Boolean);
  for (const source of sources) {
    const r = await relay(source);
    const client = new pkg.rlvr.v1.SessionService(`127.0.0.1:${r.address().port}`,
      grpc.credentials.createInsecure());
    for (let i = 0; i < Number(args.per_address); i++) open(client);
  }
  const t0 = Date.now();
  const timer = setInterval(() => {
    console.log(JSON.stringify({ flood: true, t_s: Math.round((Date.now() - t0) / 100) / 10,
                                 sources: sources.length, ...stats }));
    if (Date.now() - t0 > Number(args.run_s) * 1000) {
      clearInterval(timer);
      process.exit(0);
    }
  }, 1000);
})().catch((e) => { console.log(`flood: ${e.stack || e}`); process.exit(2); });
