/**
 * A test host in a network namespace (test/support/netns.ts): what runs inside sees only its own
 * address, this machine reaches it across the link and nothing else, and nothing is left behind.
 * Needs root; without it the tests are skipped with one line saying why. No control plane needed.
 */
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { createServer, connect, type AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import {
  createTestHost,
  DEFAULT_GATEWAY,
  hostInterfaceOf,
  listNamespaces,
  netnsSupport,
  ownedName,
  removeLeftovers,
  type TestHost,
} from '../support/netns.js';

const support = netnsSupport();
if (!support.ok) process.stderr.write(`test/harness/netns: skipped: ${support.reason}\n`);
const maybe = support.ok ? describe : describe.skip;

/** A prefix no other run shares (the owner pid in each name keeps runs apart as well). */
const PREFIX = `mesh-nstest${randomInt(1000, 9999)}-`;
/** Addresses of TEST-NET-2 (documentation range), one per host, picked at random to stay clear of concurrent runs. */
const address = (): string => `198.51.100.${randomInt(2, 254)}`;

async function ip(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.on('error', reject);
    child.on('close', () => resolve(out));
  });
}

/** Connects to `host:port`, sends a line, returns the reply line. */
function ask(host: string, port: number, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port }, () => socket.write(`${line}\n`));
    socket.setTimeout(5000, () => socket.destroy(new Error(`no answer from ${host}:${port}`)));
    createInterface({ input: socket }).once('line', (reply) => {
      socket.end();
      resolve(reply);
    });
    socket.on('error', reject);
  });
}

/** A line server inside the host: answers `<line> from <peer address>`; prints "ready" once it listens. */
const LINE_SERVER = `
const net = require('node:net');
const [host, port] = process.argv.slice(1);
net.createServer((s) => {
  s.setEncoding('utf8');
  s.once('data', (d) => s.end(d.trim() + ' from ' + s.remoteAddress + '\\n'));
}).listen(Number(port), host, () => console.log('ready'));
process.stdin.on('end', () => process.exit(0)).resume();
`;

async function startLineServer(host: TestHost, port: number): Promise<void> {
  const child = host.spawn([process.execPath, '-e', LINE_SERVER, host.address, String(port)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', () => resolve());
    child.once('exit', (code) => reject(new Error(`line server exited with ${code}: ${stderr}`)));
  });
}

maybe('a test host in a network namespace', () => {
  const made: TestHost[] = [];
  const host = async (tag: string, opts: { gateway?: string } = {}): Promise<TestHost> => {
    for (let attempt = 0; ; attempt++) {
      try {
        const h = await createTestHost({ name: ownedName(PREFIX, tag), address: address(), ...opts });
        made.push(h);
        return h;
      } catch (err) {
        // a concurrent run may hold the random address; try another one
        if (attempt >= 4 || !/already routed|routed elsewhere/.test(String(err))) throw err;
      }
    }
  };

  afterAll(async () => {
    await Promise.all(made.map((h) => h.destroy()));
    await removeLeftovers(PREFIX, 'all');
  });

  it('serves on its address to clients on this machine, which it sees coming from the gateway', async () => {
    const h = await host('serve');
    await startLineServer(h, 7070);
    expect(await ask(h.address, 7070, 'hello')).toBe(`hello from ${DEFAULT_GATEWAY}`);
  });

  it('has only loopback and its own address inside, with the default route through the gateway', async () => {
    const h = await host('inside', { gateway: '198.51.100.1' });
    const addrs = await h.exec(['ip', '-4', '-o', 'addr', 'show']);
    expect(addrs.code).toBe(0);
    const lines = addrs.stdout.trim().split('\n').map((l) => l.replace(/\s+/g, ' ').split(' ').slice(1, 4).join(' '));
    expect(lines).toEqual(['lo inet 127.0.0.1/8', `eth0 inet ${h.address}/32`]);
    const routes = await h.exec(['ip', '-4', 'route', 'show']);
    expect(routes.stdout).toContain('default via 198.51.100.1 dev eth0');
    // a failing command is reported, not thrown
    const failed = await h.exec(['sh', '-c', 'echo oops >&2; exit 3']);
    expect(failed).toEqual({ code: 3, stdout: '', stderr: 'oops\n' });
  });

  it('reaches a server of this machine that listens on the gateway address', async () => {
    const h = await host('outbound', { gateway: '198.51.100.1' });
    const server = createServer((s) => s.end('from this machine\n'));
    await new Promise<void>((resolve) => server.listen(0, h.gateway, resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const r = await h.exec([process.execPath, '-e', `require('node:net').connect(${port}, '${h.gateway}').on('data', (d) => process.stdout.write(d))`]);
      expect(r.stdout).toBe('from this machine\n');
    } finally {
      server.close();
    }
  });

  it('does not reach this machine\'s loopback: what runs inside has a network of its own', async () => {
    const server = createServer((s) => s.end('loopback\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const h = await host('isolated');
      const { port } = server.address() as AddressInfo;
      const r = await h.exec([process.execPath, '-e', `require('node:net').connect(${port}, '127.0.0.1').on('error', (e) => { console.log(e.code); }).on('data', (d) => process.stdout.write(d))`]);
      expect(r.stdout.trim()).toBe('ECONNREFUSED');
    } finally {
      server.close();
    }
  });

  it('refuses a second host with an address that is taken, naming the address', async () => {
    const first = await host('first');
    await expect(createTestHost({ name: ownedName(PREFIX, 'second'), address: first.address })).rejects.toThrow(`${first.address} is already routed`);
    expect(await listNamespaces(ownedName(PREFIX, 'second'))).toEqual([]);
  });

  it('refuses bad names and addresses with the field and the reason', async () => {
    await expect(createTestHost({ name: 'bad/name', address: '198.51.100.9' })).rejects.toThrow('createTestHost: name "bad/name" must be');
    await expect(createTestHost({ name: ownedName(PREFIX, 'x'), address: '2001:db8::1' })).rejects.toThrow('address "2001:db8::1" is not an IPv4 address');
    await expect(createTestHost({ name: ownedName(PREFIX, 'x'), address: '198.51.100.9', gateway: 'gw' })).rejects.toThrow('gateway "gw" is not an IPv4 address');
  });

  it('destroy ends the processes inside and removes the namespace, the link and the route', async () => {
    const h = await host('destroy');
    const child = h.spawn(['sleep', '300']);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await h.destroy();
    await exited;
    expect(await listNamespaces(h.name)).toEqual([]);
    expect(await ip(['link', 'show', h.hostInterface])).toBe('');
    expect(await ip(['route', 'show', 'exact', `${h.address}/32`])).toBe('');
    await h.destroy(); // again: nothing to do
    expect(() => h.spawn(['true'])).toThrow('is destroyed');
  });

  it('removeLeftovers removes namespaces whose owner process has ended and keeps the live ones', async () => {
    const live = await host('live');
    // A leftover of a crashed run: a namespace whose owner pid no longer runs, with a process inside.
    const dead = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => dead.once('exit', resolve));
    const leftover = `${PREFIX}${dead.pid}-crashed`;
    const orphan = await createTestHost({ name: leftover, address: address() });
    const inside = orphan.spawn(['sleep', '300']);
    const gone = new Promise((resolve) => inside.once('exit', resolve));

    expect(await removeLeftovers(PREFIX)).toEqual([leftover]);
    await gone;
    expect(await listNamespaces(PREFIX)).toContain(live.name);
    expect(await listNamespaces(leftover)).toEqual([]);
    expect(await ip(['link', 'show', hostInterfaceOf(leftover)])).toBe('');
    expect(await ip(['route', 'show', 'exact', `${orphan.address}/32`])).toBe('');
  });
});
