// A stand-in for Envoy, used ONLY by the agent's process-supervision tests (e2e/agent.test.ts):
// this machine has no Envoy binary. It does what the agent needs of Envoy's process and admin
// interface and nothing else: it reads the bootstrap given with -c, serves the admin port named
// there (GET /ready: PRE_INITIALIZING, then LIVE after STAND_IN_LIVE_AFTER_MS; GET
// /stats/prometheus: one sample; POST /drain_listeners), records what happened as JSON lines in
// STAND_IN_RECORD, exits 0 on SIGTERM, and exits 3 after STAND_IN_EXIT_AFTER_MS if set. It proxies
// no traffic and speaks no xDS; the bootstrap itself is checked against Envoy's rules elsewhere.
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const args = process.argv.slice(2);
const record = (event) => {
  if (process.env.STAND_IN_RECORD) appendFileSync(process.env.STAND_IN_RECORD, `${JSON.stringify({ at: Date.now(), ...event })}\n`);
};
const bootstrap = JSON.parse(readFileSync(args[args.indexOf('-c') + 1], 'utf8'));
const port = bootstrap.admin.address.socketAddress.portValue;
let state = 'PRE_INITIALIZING';
setTimeout(() => (state = 'LIVE'), Number(process.env.STAND_IN_LIVE_AFTER_MS ?? '300'));
const server = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/ready') {
    res.writeHead(state === 'LIVE' ? 200 : 503).end(`${state}\n`);
  } else if (req.method === 'GET' && path === '/stats/prometheus') {
    res.writeHead(200).end('# TYPE envoy_server_live gauge\nenvoy_server_live 1\n');
  } else if (req.method === 'POST' && path === '/drain_listeners') {
    record({ event: 'drain', url: req.url });
    state = 'DRAINING';
    res.writeHead(200).end('OK\n');
  } else res.writeHead(404).end();
});
server.listen(port, '127.0.0.1', () => record({ event: 'start', args, node: bootstrap.node.id }));
process.on('SIGTERM', () => {
  record({ event: 'sigterm' });
  server.close();
  process.exit(0);
});
if (process.env.STAND_IN_EXIT_AFTER_MS) setTimeout(() => process.exit(3), Number(process.env.STAND_IN_EXIT_AFTER_MS));
