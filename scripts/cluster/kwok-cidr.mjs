#!/usr/bin/env node
// Chooses the /24 of a plane's pod range that the next node-simulator process hands out
// (scripts/cluster/pod-network.sh, choose_kwok_cidr). A new simulator process does not know which
// addresses its predecessor gave to pods that still run, so it must not share a block with them.
//
// Usage: node kwok-cidr.mjs POD_CIDR [LAST_BLOCK] < pod list (JSON of GET /api/v1/pods)
// Prints the first /24 after LAST_BLOCK (in turn, wrapping) that no pod's IP falls in; when every
// block holds a pod, the one holding the fewest, with a warning on stderr.
import { readFileSync } from 'node:fs';

function parseV4(text) {
  const parts = text.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return undefined;
  return ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;
}

function formatV4(n) {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

const [range, last = ''] = process.argv.slice(2);
const m = /^([\d.]+)\/(\d+)$/.exec(range ?? '');
const base = m ? parseV4(m[1]) : undefined;
const bits = m ? Number(m[2]) : NaN;
if (base === undefined || !(bits >= 8 && bits <= 24)) {
  process.stderr.write(`kwok-cidr: POD_CIDR must be an IPv4 range of /8 to /24, not '${range ?? ''}'\n`);
  process.exit(2);
}
const blocks = 2 ** (24 - bits);
const first = Math.floor(base / 256) * 256;

let pods = [];
try {
  const text = readFileSync(0, 'utf8');
  pods = text.trim() ? (JSON.parse(text).items ?? []) : [];
} catch (err) {
  process.stderr.write(`kwok-cidr: cannot read the pod list (${err.message}); choosing without it\n`);
}
const used = new Array(blocks).fill(0);
for (const pod of pods) {
  const ips = (pod.status?.podIPs ?? []).map((p) => p.ip);
  if (pod.status?.podIP) ips.push(pod.status.podIP);
  for (const ip of new Set(ips)) {
    const n = parseV4(ip ?? '');
    if (n === undefined) continue;
    const i = Math.floor((n - first) / 256);
    if (n >= first && i < blocks) used[i]++;
  }
}

const lastIndex = (() => {
  const n = parseV4(last.split('/')[0]);
  return n === undefined ? -1 : Math.floor((n - first) / 256);
})();
let chosen = -1;
for (let k = 1; k <= blocks; k++) {
  const i = (((lastIndex + k) % blocks) + blocks) % blocks;
  if (used[i] === 0) {
    chosen = i;
    break;
  }
}
if (chosen < 0) {
  chosen = used.indexOf(Math.min(...used));
  process.stderr.write(
    `kwok-cidr: every /24 of ${range} holds running pods; the simulator may give a new pod an address in use (delete old namespaces or run npm run cluster:down)\n`,
  );
}
process.stdout.write(`${formatV4(first + chosen * 256)}/24\n`);
