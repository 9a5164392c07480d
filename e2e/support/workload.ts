/**
 * A workload for the identity tests: runs tools/mesh-workload (grpc-go) against the daemon's secured
 * port and reads its JSON report; mints service-account tokens through the real TokenRequest API.
 */
import { execFile, spawn } from 'node:child_process';
import { createPrivateKey, sign } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { kubeRequest, type KubeconfigCredentials } from '../../test/support/cluster.js';

export interface WorkloadReport {
  readonly ok: boolean;
  readonly code?: string;
  readonly message?: string;
  readonly chain?: number;
  readonly resources?: { readonly clusters: number; readonly listeners: number };
  readonly exitCode: number;
  readonly stderr: string;
}

/** Runs `mesh-workload <args>`; resolves to its report (never rejects on a refusal). */
export function runWorkload(bin: string, args: ReadonlyArray<string>, timeoutMs = 30_000): Promise<WorkloadReport> {
  return new Promise((resolve, reject) => {
    execFile(bin, [...args], { timeout: timeoutMs }, (err, stdout, stderr) => {
      const exitCode = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : -1) : 0;
      const line = stdout.trim().split('\n').pop() ?? '';
      try {
        resolve({ ...(JSON.parse(line) as Omit<WorkloadReport, 'exitCode' | 'stderr'>), exitCode, stderr });
      } catch {
        reject(new Error(`mesh-workload ${args.join(' ')}: no report (exit ${exitCode}): ${stdout}\n${stderr}`));
      }
    });
  });
}

/** Starts `mesh-workload xds … -hold` and resolves once the configuration has arrived; `done` is its report. */
export function holdXdsStream(bin: string, args: ReadonlyArray<string>): Promise<{ done: Promise<WorkloadReport> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['xds', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const done = new Promise<WorkloadReport>((res) => {
      child.on('close', (code) => {
        try {
          res({ ...(JSON.parse(stdout.trim().split('\n').pop() ?? '') as Omit<WorkloadReport, 'exitCode' | 'stderr'>), exitCode: code ?? -1, stderr });
        } catch {
          res({ ok: false, code: 'NO_REPORT', message: stdout, exitCode: code ?? -1, stderr });
        }
      });
    });
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
      if (stderr.includes('holding the stream')) resolve({ done });
    });
    child.on('error', reject);
    void done.then((r) => reject(new Error(`mesh-workload xds ended before holding: ${JSON.stringify(r)}`)));
  });
}

/** A token for `sa` from the TokenRequest API. */
export async function requestToken(creds: KubeconfigCredentials, namespace: string, sa: string, audiences: ReadonlyArray<string>, expirationSeconds = 600): Promise<string> {
  const res = await kubeRequest(creds, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { audiences, expirationSeconds },
  });
  if (res.status !== 201) throw new Error(`TokenRequest ${namespace}/${sa}: HTTP ${res.status}: ${JSON.stringify(res.body).slice(0, 400)}`);
  return (res.body as { status: { token: string } }).status.token;
}

/**
 * The same token with its times moved into the past, signed again with the cluster's
 * service-account signing key (the local plane's pki/sa.key): a genuine token of the cluster's
 * issuer that expired `agoSeconds` ago.
 */
export async function expiredCopy(token: string, saKeyPath: string, agoSeconds = 60): Promise<string> {
  const [header, payload] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  const now = Math.floor(Date.now() / 1000);
  const lifetime = Number(claims.exp) - Number(claims.iat);
  const moved = { ...claims, iat: now - agoSeconds - lifetime, nbf: now - agoSeconds - lifetime, exp: now - agoSeconds };
  const body = `${header}.${Buffer.from(JSON.stringify(moved)).toString('base64url')}`;
  const key = createPrivateKey(await readFile(saKeyPath, 'utf8'));
  return `${body}.${sign('sha256', Buffer.from(body), key).toString('base64url')}`;
}
