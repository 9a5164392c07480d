/**
 * The openssl command line for tests: verifies chains and prints certificates the way an operator
 * would check what the CA issued. Files go to a temporary directory that `cleanup()` removes.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface OpensslResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function openssl(args: ReadonlyArray<string>, input?: string): Promise<OpensslResult> {
  return new Promise((resolve, reject) => {
    const child = execFile('openssl', [...args], { maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err && typeof (err as NodeJS.ErrnoException).code === 'string') return reject(err);
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

export interface OpensslWorkspace {
  readonly dir: string;
  /** Writes `content` to `<dir>/<name>` and returns the path. */
  file(name: string, content: string): Promise<string>;
  /**
   * `openssl verify` of the leaf (first certificate of `chainPem`) against `rootsPem`, the other
   * certificates of the chain given as untrusted intermediates. Resolves to the result; code 0 = ok.
   */
  verify(chainPem: string, rootsPem: string, opts?: { purpose?: string; atTime?: Date }): Promise<OpensslResult>;
  /** `openssl x509 -noout -text` of the first certificate of `pem`. */
  text(pem: string): Promise<string>;
  cleanup(): Promise<void>;
}

let counter = 0;

/** Splits a PEM text into its certificate blocks. */
export function pemCertificates(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g)?.map((b) => (b.endsWith('\n') ? b : `${b}\n`)) ?? [];
}

export async function opensslWorkspace(): Promise<OpensslWorkspace> {
  const dir = await mkdtemp(join(tmpdir(), 'mesh-openssl-'));
  const file = async (name: string, content: string): Promise<string> => {
    const p = join(dir, name);
    await writeFile(p, content);
    return p;
  };
  return {
    dir,
    file,
    async verify(chainPem, rootsPem, opts = {}) {
      const certs = pemCertificates(chainPem);
      const n = ++counter;
      const leaf = await file(`leaf-${n}.pem`, certs[0] ?? '');
      const roots = await file(`roots-${n}.pem`, rootsPem);
      const args = ['verify', '-CAfile', roots];
      if (certs.length > 1) args.push('-untrusted', await file(`chain-${n}.pem`, certs.slice(1).join('')));
      if (opts.purpose) args.push('-purpose', opts.purpose);
      if (opts.atTime) args.push('-attime', String(Math.floor(opts.atTime.getTime() / 1000)));
      args.push(leaf);
      return openssl(args);
    },
    async text(pem) {
      const p = await file(`text-${++counter}.pem`, pemCertificates(pem)[0] ?? pem);
      const r = await openssl(['x509', '-noout', '-text', '-in', p]);
      if (r.code !== 0) throw new Error(`openssl x509 -text failed: ${r.stderr}`);
      return r.stdout;
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
