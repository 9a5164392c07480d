/**
 * Shows the engine's ProgressEvents to a person. On a terminal (`live`): one line per component,
 * redrawn in place, with a spinner while it works (`⠋ Meshd: applying 4/12`, `⠋ Meshd: waiting
 * for Deployment mesh-system/meshd: 0/1 replicas available`) and ✔ or ✘ when it is done.
 * Otherwise (a pipe, a file, TERM=dumb): plain lines, one when a component starts waiting and one
 * when it is done, so logs stay readable.
 */
import type { ComponentName, ComponentStatus, ProgressEvent } from '../../../install/apply/engine.js';

export const CHECK = '\u2714';
export const CROSS = '\u2718';
const SPINNER = ['\u280b', '\u2819', '\u2839', '\u2838', '\u283c', '\u2834', '\u2826', '\u2827', '\u2807', '\u280f'];
const UP = (n: number) => `\u001b[${n}A`;
const CLEAR_LINE = '\u001b[2K';

export interface ProgressRenderer {
  readonly handle: (event: ProgressEvent) => void;
  /** Stops the spinner and leaves the final lines on screen. */
  stop(): void;
}

interface Line {
  readonly component: ComponentName;
  operation: 'apply' | 'delete';
  total: number;
  done: number;
  waiting: readonly string[];
  status?: ComponentStatus;
  errors: readonly string[];
  notReady: readonly string[];
}

function counted(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

function waitingText(waiting: readonly string[]): string {
  return `waiting for ${waiting[0]}${waiting.length > 1 ? ` (and ${waiting.length - 1} more)` : ''}`;
}

/** The finished line of a component. */
export function doneText(line: Pick<Line, 'component' | 'status' | 'errors' | 'notReady' | 'operation' | 'done'>): string {
  if (line.status === 'Healthy') {
    return line.operation === 'delete' ? `${CHECK} ${line.component} removed (${counted(line.done, 'object')})` : `${CHECK} ${line.component} installed`;
  }
  if (line.status === 'Reconciling') return `- ${line.component}: not ready yet: ${line.notReady.join('; ')}`;
  const problems = [...line.errors, ...line.notReady.map((n) => `not ready: ${n}`)];
  return `${CROSS} ${line.component}: ${problems.join('; ')}`;
}

function workingText(line: Line, frame: string): string {
  if (line.waiting.length > 0) return `${frame} ${line.component}: ${waitingText(line.waiting)}`;
  const verb = line.operation === 'delete' ? 'removing' : 'applying';
  return `${frame} ${line.component}: ${verb} ${line.done}/${line.total}`;
}

export function createProgress(write: (text: string) => void, live: boolean): ProgressRenderer {
  const lines: Line[] = [];
  let drawn = 0;
  let frame = 0;
  let timer: ReturnType<typeof setInterval> | undefined;

  const redraw = () => {
    let out = drawn > 0 ? UP(drawn) : '';
    for (const l of lines) out += `${CLEAR_LINE}${l.status ? doneText(l) : workingText(l, SPINNER[frame % SPINNER.length])}\n`;
    drawn = lines.length;
    write(out);
  };

  const lineOf = (component: ComponentName): Line => {
    let l = lines.find((x) => x.component === component);
    if (!l) {
      l = { component, operation: 'apply', total: 0, done: 0, waiting: [], errors: [], notReady: [] };
      lines.push(l);
    }
    return l;
  };

  const handle = (e: ProgressEvent) => {
    switch (e.type) {
      case 'component-start': {
        const l = lineOf(e.component);
        l.operation = e.operation;
        l.total = e.total;
        if (live && !timer) {
          timer = setInterval(() => {
            frame++;
            redraw();
          }, 120);
          timer.unref?.();
        }
        break;
      }
      case 'object':
        if (!e.component) return;
        if (e.action !== 'kept' && e.action !== 'pruned') lineOf(e.component).done++;
        else if (e.action === 'pruned' && !live) write(`  pruned ${e.object}\n`);
        break;
      case 'waiting': {
        const l = lineOf(e.component);
        if (!live && l.waiting.length === 0) write(`- ${e.component}: ${waitingText(e.notReady)}\n`);
        l.waiting = e.notReady;
        break;
      }
      case 'component-done': {
        const l = lineOf(e.component);
        l.status = e.status;
        l.errors = e.errors;
        l.notReady = e.notReady;
        l.waiting = [];
        if (!live) write(`${doneText(l)}\n`);
        break;
      }
    }
    if (live) redraw();
  };

  return {
    handle,
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      if (live && lines.length > 0) redraw();
    },
  };
}
