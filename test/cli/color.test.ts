/**
 * Colour as a user sees it from the built program: on a pseudo-terminal (util-linux `script`) the
 * levels of `meshctl analyze` are coloured; NO_COLOR (any value), TERM=dumb and --color=false turn
 * that off, and output into a pipe never carries escape codes.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { distProgram } from './dist.js';

const hasScript = spawnSync('sh', ['-c', 'command -v script']).status === 0;
const onPty = hasScript ? it : it.skip;

let dir: string;
let file: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'color-'));
  file = path.join(dir, 'broken.yaml');
  fs.writeFileSync(
    file,
    `apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: {name: reviews-route, namespace: shop}
spec:
  hosts: [reviews.example.com]
  http:
    - route:
        - destination: {host: reviews.example.com, subset: v2}
`,
  );
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
const ESC = '\u001b[';
const RED_ERROR = '\u001b[31mError\u001b[0m [MESH0103]';

/** Runs meshctl with standard output on a pseudo-terminal; returns what the terminal showed. */
function onTerminal(args: string[], env: Record<string, string | undefined> = {}): { status: number | null; screen: string } {
  const line = [process.execPath, distProgram('meshctl'), ...args].map(quote).join(' ');
  const r = spawnSync('script', ['-qec', line, '/dev/null'], { encoding: 'utf8', env: { ...process.env, TERM: 'xterm', NO_COLOR: undefined, ...env } });
  return { status: r.status, screen: r.stdout };
}

/** Runs meshctl with standard output on a pipe. */
function onPipe(args: string[], env: Record<string, string | undefined> = {}) {
  return spawnSync(process.execPath, [distProgram('meshctl'), ...args], { encoding: 'utf8', env: { ...process.env, TERM: 'xterm', NO_COLOR: undefined, ...env } });
}

describe('meshctl analyze colour', () => {
  const analyze = () => ['analyze', '--use-cluster=false', '-A', file];

  onPty('colours the level on a terminal', () => {
    const r = onTerminal(analyze());
    expect(r.status).toBe(79);
    expect(r.screen).toContain(RED_ERROR);
  });

  onPty.each([
    ['NO_COLOR=1', [], { NO_COLOR: '1' }],
    ['NO_COLOR set empty', [], { NO_COLOR: '' }],
    ['TERM=dumb', [], { TERM: 'dumb' }],
    ['--color=false', ['--color=false'], {}],
  ] as const)('leaves colour out on a terminal with %s', (_what, extra, env) => {
    const r = onTerminal([...analyze(), ...extra], env);
    expect(r.status).toBe(79);
    expect(r.screen).toMatch(/^Error \[MESH0103\]/m);
    expect(r.screen).not.toContain(ESC);
  });

  it('never colours into a pipe, even with --color', () => {
    const r = onPipe([...analyze(), '--color']);
    expect(r.status).toBe(79);
    expect(r.stdout).toMatch(/^Error \[MESH0103\]/m);
    expect(r.stdout).not.toContain(ESC);
  });
});

describe('meshctl options colour', () => {
  onPty('makes the table header bold on a terminal only', () => {
    expect(onTerminal(['options']).screen).toContain(`${ESC}1mSETTING`);
    expect(onTerminal(['options'], { NO_COLOR: 'yes' }).screen).not.toContain(ESC);
    expect(onPipe(['options']).stdout).not.toContain(ESC);
  });
});
