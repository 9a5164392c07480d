// One Echo backend as a process of its own, for a simulated pod's network namespace (pod-player.ts
// starts it with `ip netns exec`). The same service as backend.ts: unary `/mesh.test.Echo/Echo`
// with JSON messages; each reply names the backend and echoes the request's `x-` metadata.
//
// Usage: node echo-child.mjs NAME HOST PORT
// Prints one JSON line on stdout once it listens ({"listening":"HOST:PORT"}); a bind failure goes to
// stderr with exit code 1. Exits when stdin closes (so it ends with the process that started it)
// or on SIGTERM.
import grpc from '@grpc/grpc-js';

const [name, host, portText] = process.argv.slice(2);
const port = Number(portText);
if (!name || !host || !Number.isInteger(port) || port <= 0 || port > 65535) {
  process.stderr.write('usage: node echo-child.mjs NAME HOST PORT\n');
  process.exit(2);
}

const serialize = (value) => Buffer.from(JSON.stringify(value ?? {}), 'utf8');
const deserialize = (bytes) => (bytes.length === 0 ? {} : JSON.parse(bytes.toString('utf8')));

const server = new grpc.Server();
server.addService(
  {
    Echo: {
      path: '/mesh.test.Echo/Echo',
      requestStream: false,
      responseStream: false,
      requestSerialize: serialize,
      requestDeserialize: deserialize,
      responseSerialize: serialize,
      responseDeserialize: deserialize,
    },
  },
  {
    Echo: (call, callback) => {
      const headers = {};
      for (const [key, value] of Object.entries(call.metadata.getMap())) {
        if (key.startsWith('x-')) headers[key] = Buffer.isBuffer(value) ? value.toString('base64') : String(value);
      }
      const message = call.request?.message;
      callback(null, { backend: name, headers, ...(message !== undefined ? { message } : {}) });
    },
  },
);

const exit = () => {
  server.forceShutdown();
  process.exit(0);
};
process.on('SIGTERM', exit);
process.stdin.on('end', exit).on('error', exit).resume();

server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
  if (err) {
    process.stderr.write(`echo-child ${name}: cannot listen on ${host}:${port}: ${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`${JSON.stringify({ listening: `${host}:${bound}` })}\n`);
});
