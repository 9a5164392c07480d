import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/util/config-error.js';
import { formatConsoleLine, logTimestamp } from '../../src/log/console-format.js';
import {
  closeLogging,
  configureLogging,
  flushLogs,
  getLogger,
  logOptionsFromFlags,
  rotatedFileName,
  scopeLevels,
  setScopeLevel,
  type LogFlags,
} from '../../src/log/logger.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meshlog-'));
});
afterEach(async () => {
  await closeLogging();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Configures logging to a fresh file (plus the given flags) and returns a reader of its lines. */
function logToFile(flags: LogFlags = {}): () => Promise<string[]> {
  const file = path.join(dir, 'out.log');
  configureLogging(logOptionsFromFlags({ log_target: [file], ...flags }));
  return async () => {
    await flushLogs();
    return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '');
  };
}

const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

describe('outputs and formats', () => {
  it('writes JSON lines to a file target', async () => {
    const read = logToFile({ log_as_json: true });
    getLogger('ads').info({ key: 'value', n: 3 }, 'pushed %d clusters', 5);
    const lines = await read();
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0]);
    expect(entry).toMatchObject({ level: 'info', scope: 'ads', msg: 'pushed 5 clusters', key: 'value', n: 3 });
    expect(entry.time).toMatch(TIME);
    expect(entry).not.toHaveProperty('pid');
  });

  it('writes the console format to a file target', async () => {
    const read = logToFile();
    getLogger('ads').info({ key: 'value', note: 'two words' }, 'message');
    getLogger('model').warn('plain');
    const lines = await read();
    expect(lines).toHaveLength(2);
    const [time, ...rest] = lines[0].split('\t');
    expect(time).toMatch(TIME);
    expect(rest).toEqual(['info', 'ads', 'message', 'key=value note="two words"']);
    expect(lines[1].split('\t').slice(1)).toEqual(['warn', 'model', 'plain']);
  });

  it('writes to several targets at once', async () => {
    const a = path.join(dir, 'a.log');
    const b = path.join(dir, 'b.log');
    configureLogging(logOptionsFromFlags({ log_target: [a, b], log_as_json: true }));
    getLogger('default').error(new Error('boom'), 'failed');
    await flushLogs();
    for (const file of [a, b]) {
      const entry = JSON.parse(fs.readFileSync(file, 'utf8'));
      expect(entry).toMatchObject({ level: 'error', scope: 'default', msg: 'failed', err: { message: 'boom', type: 'Error' } });
    }
  });

  it('refuses an unopenable target with a ConfigError and keeps the old setup', async () => {
    const read = logToFile();
    const bad = path.join(dir, 'missing', 'x.log');
    expect(() => configureLogging(logOptionsFromFlags({ log_target: [bad] }))).toThrow(ConfigError);
    expect(() => configureLogging(logOptionsFromFlags({ log_target: [bad] }))).toThrow(`--log_target: cannot open ${JSON.stringify(bad)}`);
    getLogger('ads').info('still here');
    expect(await read()).toHaveLength(1);
  });

  it('formats values in console lines', () => {
    const line = formatConsoleLine({
      time: logTimestamp(new Date('2026-11-23T06:00:00Z')),
      level: 'info',
      scope: 'ads',
      msg: 'message',
      fields: { key: 'value', empty: '', n: 1.5, ok: true, obj: { a: 1 }, err: new Error('bad thing'), caller: 'src/x.ts:3', skipped: undefined },
    });
    expect(line).toBe('2026-11-23T06:00:00.000000Z\tinfo\tads\tsrc/x.ts:3\tmessage\tkey=value empty="" n=1.5 ok=true obj={"a":1} err="bad thing"\n');
  });
});

describe('levels', () => {
  it('applies --log_output_level per scope with default for the rest, and none silences', async () => {
    const read = logToFile({ log_output_level: 'default:warn,ads:debug,kube:none' });
    getLogger('ads').debug('ads debug');
    getLogger('model').info('model info');
    getLogger('model').warn('model warn');
    getLogger('kube').fatal('kube fatal');
    const lines = await read();
    expect(lines.map((l) => l.split('\t')[3])).toEqual(['ads debug', 'model warn']);
  });

  it('applies to loggers taken before the configuration, and changes at run time', async () => {
    const ads = getLogger('ads');
    const read = logToFile();
    ads.debug('hidden');
    setScopeLevel('ads', 'debug');
    ads.debug('shown');
    expect(scopeLevels().ads).toBe('debug');
    expect(scopeLevels().model).toBe('info');
    setScopeLevel('default', 'error');
    getLogger('model').warn('hidden too');
    ads.debug('ads keeps its own level');
    setScopeLevel('all', 'none');
    ads.fatal('silenced');
    expect((await read()).map((l) => l.split('\t')[3])).toEqual(['shown', 'ads keeps its own level']);
    expect(() => setScopeLevel('nope', 'info')).toThrow('unknown log scope "nope"');
    expect(() => setScopeLevel('ads', 'loud')).toThrow('unknown log level "loud"');
  });

  it('does no work for a disabled level', async () => {
    const read = logToFile({ log_as_json: true });
    const logger = getLogger('ads');
    let touched = 0;
    const fields = {
      get expensive() {
        touched++;
        return 1;
      },
    };
    expect(logger.isLevelEnabled('debug')).toBe(false);
    logger.debug(fields, 'not serialized');
    expect(touched).toBe(0);
    logger.info(fields, 'serialized');
    expect(touched).toBe(1);
    expect(await read()).toHaveLength(1);
  });

  it('adds caller info for --log_caller scopes only', async () => {
    const read = logToFile({ log_caller: 'ads', log_as_json: true });
    getLogger('ads').info('with caller');
    getLogger('model').info('without');
    const [withCaller, without] = (await read()).map((l) => JSON.parse(l));
    expect(withCaller.caller).toMatch(/^test\/log\/logger\.test\.ts:\d+$/);
    expect(without).not.toHaveProperty('caller');
  });

  it('attaches stacks at and above --log_stacktrace_level', async () => {
    const read = logToFile({ log_stacktrace_level: 'default:none,ads:error', log_caller: 'ads' });
    getLogger('ads').warn('no stack');
    getLogger('ads').error({ id: 7 }, 'with stack');
    getLogger('model').fatal('model has none');
    const lines = await read();
    const text = lines.join('\n');
    expect(lines[0]).toMatch(/\twarn\tads\ttest\/log\/logger\.test\.ts:\d+\tno stack$/);
    expect(text).toMatch(/\terror\tads\ttest\/log\/logger\.test\.ts:\d+\twith stack\tid=7\nat .*logger\.test\.ts:\d+/);
    expect(text).not.toMatch(/pino/);
    expect(lines[lines.length - 1]).toMatch(/\tfatal\tmodel\tmodel has none$/);
  });
});

describe('rotation', () => {
  it('names rotated files after the base name and time', () => {
    expect(rotatedFileName('meshd.log', new Date('2026-11-23T06:01:02.345Z'), 1)).toBe('meshd-20261123T060102Z.log');
    expect(rotatedFileName('meshd', new Date('2026-11-23T06:01:02Z'), 3)).toBe('meshd-20261123T060102Z-3');
  });

  it('rotates --log_rotate files on size', async () => {
    const file = path.join(dir, 'logs', 'meshd.log');
    configureLogging(logOptionsFromFlags({ log_target: [], log_rotate: file, log_rotate_max_size: 1, log_as_json: true }));
    const logger = getLogger('ads');
    const filler = 'x'.repeat(1000);
    for (let i = 0; i < 1500; i++) logger.info({ i, filler }, 'fill');
    await flushLogs();
    await closeLogging();
    const files = fs.readdirSync(path.join(dir, 'logs')).filter((f) => f.endsWith('.log'));
    expect(files).toContain('meshd.log');
    const rotated = files.filter((f) => /^meshd-\d{8}T\d{6}Z(-\d+)?\.log$/.test(f));
    expect(rotated.length).toBeGreaterThanOrEqual(1);
    const all = files.flatMap((f) => fs.readFileSync(path.join(dir, 'logs', f), 'utf8').split('\n').filter((l) => l !== ''));
    expect(all).toHaveLength(1500);
    for (const f of rotated) expect(fs.statSync(path.join(dir, 'logs', f)).size).toBeLessThanOrEqual(1024 * 1024 + 2000);
  });
});
