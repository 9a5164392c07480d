/**
 * Jest global setup and teardown: start the local control plane (scripts/cluster/up.sh) once for the
 * whole run, so that test files calling `ensureCluster()` (test/support/cluster.ts) share one plane
 * instead of each starting and stopping their own. Teardown stops the plane only when this run
 * created it; a plane already running (e.g. from `npm run cluster:up`) is left running.
 * MESH_TEST_CLUSTER=0 skips both, and MESH_E2E_KUBECONFIG (an external cluster) makes them no-ops;
 * test files then start the plane on demand. Plain JavaScript: Jest loads these outside the ESM
 * transform.
 */
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const scripts = join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'scripts', 'cluster');
const createdFlag = '__meshClusterCreatedByRun';

function run(script) {
  return new Promise((resolveRun, reject) => {
    const child = spawn('bash', [join(scripts, script)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c) => (stderr = (stderr + c).slice(-200_000)));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolveRun({ stdout, stderr }) : reject(new Error(`scripts/cluster/${script} exited with ${code}:\n${stderr.slice(-8000)}`))));
  });
}

function skipped() {
  return process.env.MESH_TEST_CLUSTER === '0' || Boolean(process.env.MESH_E2E_KUBECONFIG);
}

export async function setup() {
  if (skipped()) return;
  const { stderr } = await run('up.sh');
  globalThis[createdFlag] = /^cluster: new state in /m.test(stderr);
}

export async function teardown() {
  if (skipped() || !globalThis[createdFlag]) return;
  await run('down.sh');
}
