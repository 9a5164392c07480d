/**
 * What a person sees while meshctl installs (src/cli/meshctl/install/progress.ts): plain lines when
 * output is not a terminal, a redrawn per-component display with ✔/✘ on a terminal.
 */
import { createProgress } from '../../src/cli/meshctl/install/progress.js';
import type { ProgressEvent } from '../../src/install/apply/engine.js';

const events: ProgressEvent[] = [
  { type: 'component-start', component: 'Base', total: 2, operation: 'apply' },
  { type: 'object', component: 'Base', object: 'Namespace mesh-system', action: 'created' },
  { type: 'object', component: 'Base', object: 'ServiceAccount mesh-system/meshd-service-account', action: 'unchanged' },
  { type: 'component-done', component: 'Base', status: 'Healthy', errors: [], notReady: [] },
  { type: 'component-start', component: 'Meshd', total: 1, operation: 'apply' },
  { type: 'object', component: 'Meshd', object: 'Deployment mesh-system/meshd', action: 'updated' },
  { type: 'waiting', component: 'Meshd', notReady: ['Deployment mesh-system/meshd: 0/1 replicas available', 'Service mesh-system/meshd: not found'] },
  { type: 'waiting', component: 'Meshd', notReady: ['Deployment mesh-system/meshd: 0/1 replicas available'] },
  { type: 'component-done', component: 'Meshd', status: 'Error', errors: [], notReady: ['Deployment mesh-system/meshd: 0/1 replicas available'] },
];

describe('install progress', () => {
  it('writes plain lines without a terminal: one when waiting starts, one per finished component', () => {
    const out: string[] = [];
    const p = createProgress((t) => out.push(t), false);
    events.forEach(p.handle);
    p.stop();
    expect(out.join('')).toBe(
      [
        '✔ Base installed',
        '- Meshd: waiting for Deployment mesh-system/meshd: 0/1 replicas available (and 1 more)',
        '✘ Meshd: not ready: Deployment mesh-system/meshd: 0/1 replicas available',
        '',
      ].join('\n'),
    );
  });

  it('redraws one line per component in place on a terminal', () => {
    const out: string[] = [];
    const p = createProgress((t) => out.push(t), true);
    events.slice(0, 6).forEach(p.handle);
    // Live: the Meshd line shows progress under the finished Base line, redrawn with cursor-up.
    const screen = out[out.length - 1];
    expect(screen.startsWith('\u001b[2A')).toBe(true);
    const CLEAR = '\u001b[2K';
    expect(screen.slice('\u001b[2A'.length).split(CLEAR)).toEqual(['', '✔ Base installed\n', expect.stringMatching(/^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Meshd: applying 1\/1\n$/)]);
    events.slice(6, 7).forEach(p.handle);
    expect(out[out.length - 1]).toContain('Meshd: waiting for Deployment mesh-system/meshd: 0/1 replicas available (and 1 more)');
    events.slice(7).forEach(p.handle);
    p.stop();
    const last = out[out.length - 1];
    expect(last).toContain('✔ Base installed\n');
    expect(last).toContain('✘ Meshd: not ready: Deployment mesh-system/meshd: 0/1 replicas available\n');
    expect(last).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
  });
});
