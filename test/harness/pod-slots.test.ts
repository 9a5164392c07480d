/**
 * How planes on one machine keep their pod addresses and namespace names apart
 * (scripts/cluster/pod-network.sh), and which address block a new node-simulator process takes
 * (scripts/cluster/kwok-cidr.mjs). The functions run in bash against a claims directory of the
 * test's own; no control plane is needed. Only the clean-up test touches the machine's network, with
 * namespaces of a prefix of its own (root only).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listNamespaces, netnsSupport, removeLeftovers } from '../support/netns.js';

const scripts = join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'scripts', 'cluster');

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'mesh-pod-slots-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `body` in bash with the plane's scripts sourced, as the plane in `plane`. Removing network
 * namespaces is replaced by a line on stderr, so that a real plane's namespaces stay untouched.
 */
function bash(plane: string, body: string): Run {
  const r = spawnSync(
    'bash',
    ['-c', `set -euo pipefail; source "${scripts}/lib.sh"; pod_netns_cleanup() { echo "cleanup $*" >&2; }; ${body}`],
    { encoding: 'utf8', env: { ...process.env, MESH_CLUSTER_DIR: plane, MESH_POD_SLOTS_DIR: join(root, 'slots') } },
  );
  return { code: r.status, stdout: r.stdout.trim(), stderr: r.stderr.trim() };
}

/** A plane's state dir as up.sh leaves it, holding `slot`. */
function plane(name: string, slot?: number): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, '.mesh-cluster'), '');
  if (slot !== undefined) writeFileSync(join(dir, 'cluster.env'), `STATE_FORMAT=2\nPOD_SLOT=${slot}\n`);
  return dir;
}

function claim(dir: string, slot = ''): Run {
  const r = bash(dir, `claim_pod_slot ${slot}`);
  // up.sh writes cluster.env after claiming; do the same so the claim is live.
  if (r.code === 0) writeFileSync(join(dir, 'cluster.env'), `STATE_FORMAT=2\nPOD_SLOT=${r.stdout}\n`);
  return r;
}

describe('pod slots of the planes on one machine', () => {
  it('gives planes running at once different slots, pod ranges and namespace prefixes', () => {
    const a = claim(plane('a'));
    const b = claim(plane('b'));
    expect([a.code, a.stdout, b.code, b.stdout]).toEqual([0, '0', 0, '1']);
    expect(bash(root, 'pod_cidr_of 0; pod_cidr_of 1; pod_cidr_of 15; netns_prefix_of 1').stdout.split('\n')).toEqual([
      '198.19.192.0/22',
      '198.19.196.0/22',
      '198.19.252.0/22',
      'mesh-pod1-',
    ]);
    // a plane that starts again keeps its slot
    expect(claim(join(root, 'b'), '1')).toMatchObject({ code: 0, stdout: '1' });
  });

  it('takes over the slot of a plane whose state is gone, removing the namespaces it left', () => {
    const gone = plane('gone');
    expect(claim(gone).stdout).toBe('0');
    rmSync(gone, { recursive: true });
    const next = claim(plane('next'));
    expect(next.stdout).toBe('0');
    expect(next.stderr).toContain(`pod slot 0: taking over the stale claim of ${gone}`);
    expect(next.stderr).toContain('cleanup mesh-pod0- all');
  });

  it('treats a claim as stale once its plane holds another slot', () => {
    const moved = plane('moved');
    expect(claim(moved).stdout).toBe('0');
    writeFileSync(join(moved, 'cluster.env'), 'STATE_FORMAT=2\nPOD_SLOT=7\n');
    expect(claim(plane('other')).stdout).toBe('0');
  });

  it('refuses a slot another running plane holds, naming that plane', () => {
    const a = plane('a');
    expect(claim(a).stdout).toBe('0');
    const r = claim(plane('b'), '0');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`pod slot 0 (198.19.192.0/22) is held by the plane in ${a} as well`);
  });

  it('refuses a 17th plane and says how to make room', () => {
    // 16 planes set up one after another, as up.sh does (claim, then cluster.env), in one shell.
    const many = bash(
      root,
      `for i in $(seq 0 15); do d="${root}/p$i"; mkdir -p "$d"; touch "$d/.mesh-cluster"; s="$(MESH_CLUSTER_DIR="$d" cluster_dir="$d" claim_pod_slot)"; printf 'POD_SLOT=%s\n' "$s" >"$d/cluster.env"; printf '%s ' "$s"; done`,
    );
    expect(many.stdout).toBe([...Array(16).keys()].join(' '));
    const r = claim(plane('one-too-many'));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('all 16 pod slots');
    expect(r.stderr).toContain('npm run cluster:down');
  });

  it('release drops only the plane\'s own claim', () => {
    const a = plane('a');
    const b = plane('b');
    claim(a);
    claim(b);
    expect(bash(b, 'release_pod_slot 0').code).toBe(0);
    expect(claim(plane('c')).stdout).toBe('2'); // 0 is still a's
    expect(bash(a, 'release_pod_slot 0').code).toBe(0);
    expect(claim(plane('d')).stdout).toBe('0');
  });
});

const netns = netnsSupport();
if (!netns.ok) process.stderr.write(`test/harness/pod-slots: the namespace clean-up test is skipped: ${netns.reason}\n`);

describe('leftover namespaces of a plane', () => {
  const prefix = `mesh-podtest${process.pid}-`;
  /** Another plane's prefix that starts like ours. */
  const sibling = `mesh-podtest${process.pid}0-`;
  afterAll(async () => {
    await removeLeftovers(prefix, 'all');
    await removeLeftovers(sibling, 'all');
  });

  (netns.ok ? it : it.skip)('up removes those whose owner process is gone, down removes all, other prefixes stay', async () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const mk = (name: string): void => void spawnSync('ip', ['netns', 'add', name]);
    mk(`${prefix}${dead}-198-19-192-1`);
    mk(`${prefix}${process.pid}-198-19-192-2`);
    mk(`${sibling}${dead}-198-19-196-1`);
    const sweep = (which: string): Run => {
      const r = spawnSync('bash', ['-c', `source "${scripts}/lib.sh"; pod_netns_cleanup "${prefix}" ${which}`], { encoding: 'utf8', env: { ...process.env, MESH_CLUSTER_DIR: join(root, 'p') } });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    expect(sweep('dead').stderr).toBe(`cluster: removed network namespace ${prefix}${dead}-198-19-192-1\n`);
    expect(await listNamespaces(prefix)).toEqual([`${prefix}${process.pid}-198-19-192-2`]);
    sweep('all');
    expect(await listNamespaces(prefix)).toEqual([]);
    expect(await listNamespaces(sibling)).toEqual([`${sibling}${dead}-198-19-196-1`]);
  });
});

describe("the node simulator's address block", () => {
  const choose = (pods: string[], last = ''): Run => {
    const items = pods.map((podIP) => ({ status: { podIP } }));
    const r = spawnSync('node', [join(scripts, 'kwok-cidr.mjs'), '198.19.196.0/22', ...(last ? [last] : [])], {
      input: JSON.stringify({ items }),
      encoding: 'utf8',
    });
    return { code: r.status, stdout: r.stdout.trim(), stderr: r.stderr.trim() };
  };

  it('takes the block after the last one, skipping blocks that running pods use, and wraps', () => {
    expect(choose([]).stdout).toBe('198.19.196.0/24');
    expect(choose(['198.19.196.1', '198.19.196.2'], '198.19.196.0/24').stdout).toBe('198.19.197.0/24');
    expect(choose(['198.19.197.1'], '198.19.196.0/24').stdout).toBe('198.19.198.0/24');
    expect(choose(['198.19.196.9'], '198.19.199.0/24').stdout).toBe('198.19.197.0/24');
    // addresses outside the plane's range (another plane's, a host network pod's) do not count
    expect(choose(['198.19.200.1', '10.0.0.1'], '198.19.199.0/24').stdout).toBe('198.19.196.0/24');
  });

  it('takes the least used block with a warning when every block holds running pods', () => {
    const r = choose(['198.19.196.1', '198.19.196.2', '198.19.197.1', '198.19.198.1', '198.19.199.1', '198.19.199.2']);
    expect(r.stdout).toBe('198.19.197.0/24');
    expect(r.stderr).toContain('every /24 of 198.19.196.0/22 holds running pods');
  });

  it('refuses a range it cannot split into blocks', () => {
    const r = spawnSync('node', [join(scripts, 'kwok-cidr.mjs'), '198.19.196.0/25'], { input: '', encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("POD_CIDR must be an IPv4 range of /8 to /24, not '198.19.196.0/25'");
  });
});
