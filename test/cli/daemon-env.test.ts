import { ConfigError, DAEMON_ENV_VARS, describeDaemonEnv, parseDaemonEnv, type EnvVarSpec } from '../../src/config/daemon-env.js';
import { parseDuration } from '../../src/util/duration.js';
import { specTable } from './spec-tables.js';

const table: readonly EnvVarSpec[] = DAEMON_ENV_VARS;
const specRows = specTable('### Environment variables');

describe('daemon environment table', () => {
  it('lists exactly the variables of the spec, in its order', () => {
    expect(specRows.length).toBeGreaterThan(100);
    expect(table.map((v) => v.name)).toEqual(specRows.map((r) => r[0]));
  });

  it.each(specRows.map((r) => [r[0], r]))('%s has the spec type and default, and a description where the spec has one', (_name, row) => {
    const [name, type, dflt, meaning] = row as string[];
    const spec = table.find((v) => v.name === name);
    expect(spec).toBeDefined();
    expect(spec?.type).toBe(type);
    expect(spec?.default).toBe(dflt === 'none' ? null : dflt);
    expect(spec?.description === '').toBe(meaning === 'No description given.');
  });
});

describe('parseDaemonEnv', () => {
  const defaults = parseDaemonEnv({});

  it('gives every variable its default when unset', () => {
    expect(Object.keys(defaults).sort()).toEqual(table.map((v) => v.name).sort());
    for (const spec of table) {
      const value = (defaults as Record<string, unknown>)[spec.name];
      if (spec.default === null) expect(value).toBeUndefined();
      else if (spec.type === 'B') expect(value).toBe(spec.default === 'true');
      else if (spec.type === 'D') expect(value).toBe(parseDuration(spec.default));
      else if (spec.type === 'I' || spec.type === 'F') expect(value).toBe(Number(spec.default));
      else expect(value).toBe(spec.default);
    }
  });

  it('types values: durations in ms, booleans, numbers, strings', () => {
    expect(defaults.DISC_DEBOUNCE_AFTER).toBe(100);
    expect(defaults.DISC_DEBOUNCE_MAX).toBe(10_000);
    expect(defaults.CA_SELF_SIGNED_CA_CERT_TTL).toBe(87600 * 3_600_000);
    expect(defaults.MESH_DELTA_XDS).toBe(false);
    expect(defaults.XDS_AUTH).toBe(true);
    expect(defaults.MESH_GPRC_MAXRECVMSGSIZE).toBe(4194304);
    expect(defaults.DISC_TRACE_SAMPLING).toBe(1);
    expect(defaults.POD_NAMESPACE).toBe('mesh-system');
    expect(defaults.TOKEN_AUDIENCES).toBe('mesh-ca');
    expect(defaults.EXTERNAL_CA).toBeUndefined();
    expect(defaults.MESH_DEFAULT_REQUEST_TIMEOUT).toBe(0);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(defaults)).toBe(true);
  });

  it('reads set values', () => {
    const env = parseDaemonEnv({
      DISC_DEBOUNCE_AFTER: '250ms',
      MESH_DELTA_XDS: 'T',
      XDS_AUTH: '0',
      DISC_PUSH_THROTTLE: '7',
      DISC_STATUS_QPS: '12.5',
      DISC_TRACE_SAMPLING: '100',
      EXTERNAL_CA: 'MESHD_RA_MESH_API',
      REVISION: 'canary',
      VALIDATION_WEBHOOK_CONFIG_NAME: '',
      UNRELATED: 'ignored',
    });
    expect(env.DISC_DEBOUNCE_AFTER).toBe(250);
    expect(env.MESH_DELTA_XDS).toBe(true);
    expect(env.XDS_AUTH).toBe(false);
    expect(env.DISC_PUSH_THROTTLE).toBe(7);
    expect(env.DISC_STATUS_QPS).toBe(12.5);
    expect(env.DISC_TRACE_SAMPLING).toBe(100);
    expect(env.EXTERNAL_CA).toBe('MESHD_RA_MESH_API');
    expect(env.REVISION).toBe('canary');
    expect(env.VALIDATION_WEBHOOK_CONFIG_NAME).toBe(''); // empty string: skip patching
    expect('UNRELATED' in env).toBe(false);
  });

  it('treats empty typed values as unset', () => {
    const env = parseDaemonEnv({ DISC_DEBOUNCE_AFTER: '', XDS_AUTH: '', DISC_PUSH_THROTTLE: '', EXTERNAL_CA: '' });
    expect(env.DISC_DEBOUNCE_AFTER).toBe(100);
    expect(env.XDS_AUTH).toBe(true);
    expect(env.DISC_PUSH_THROTTLE).toBe(100);
    expect(env.EXTERNAL_CA).toBeUndefined();
  });

  it.each(['1', 't', 'T', 'TRUE', 'true', 'True'])('accepts %s as true', (text) => {
    expect(parseDaemonEnv({ MESH_DELTA_XDS: text }).MESH_DELTA_XDS).toBe(true);
  });

  it.each(['0', 'f', 'F', 'FALSE', 'false', 'False'])('accepts %s as false', (text) => {
    expect(parseDaemonEnv({ XDS_AUTH: text }).XDS_AUTH).toBe(false);
  });

  it.each([
    ['DISC_DEBOUNCE_AFTER', 'abc', 'DISC_DEBOUNCE_AFTER: invalid duration "abc"'],
    ['DISC_DEBOUNCE_MAX', '5x', 'DISC_DEBOUNCE_MAX: invalid duration "5x": unknown unit "x"'],
    ['MESH_DELTA_XDS', 'yes', 'MESH_DELTA_XDS: invalid boolean "yes"'],
    ['DISC_PUSH_THROTTLE', '1.5', 'DISC_PUSH_THROTTLE: invalid integer "1.5"'],
    ['DISC_PUSH_THROTTLE', '0', 'DISC_PUSH_THROTTLE: 0 is out of range: must be at least 1'],
    ['DISC_STATUS_QPS', 'fast', 'DISC_STATUS_QPS: invalid number "fast"'],
    ['DISC_TRACE_SAMPLING', '100.5', 'DISC_TRACE_SAMPLING: 100.5 is out of range: must be between 0 and 100'],
    ['DISC_TRACE_SAMPLING', '-1', 'DISC_TRACE_SAMPLING: -1 is out of range: must be between 0 and 100'],
    ['EXTERNAL_CA', 'OTHER', 'EXTERNAL_CA: invalid value "OTHER" (allowed: MESHD_RA_CLUSTER_API, MESHD_RA_MESH_API)'],
  ])('%s=%j is a ConfigError naming the variable', (name, value, message) => {
    let error: unknown;
    try {
      parseDaemonEnv({ [name]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(message);
    expect((error as ConfigError).issues).toHaveLength(1);
  });

  it('lists every bad variable in one error', () => {
    let error: unknown;
    try {
      parseDaemonEnv({ DISC_DEBOUNCE_AFTER: 'abc', XDS_AUTH: 'nope', DISC_XDS_CACHE_SIZE: 'big' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issues = (error as ConfigError).issues;
    expect(issues).toHaveLength(3);
    expect(issues[0]).toBe('DISC_DEBOUNCE_AFTER: invalid duration "abc"');
    expect(issues.join('\n')).toMatch(/XDS_AUTH: invalid boolean "nope"/);
    expect(issues.join('\n')).toMatch(/DISC_XDS_CACHE_SIZE: invalid integer "big"/);
    expect((error as Error).message).toBe(issues.join('; '));
  });

  it('describes every variable for help output', () => {
    const text = describeDaemonEnv();
    for (const spec of table) expect(text).toContain(`  ${spec.name} (`);
    expect(text).toContain('DISC_DEBOUNCE_AFTER (duration, default 100ms)');
    expect(text).toContain('AUDIENCE (string)\n');
  });
});

describe('DaemonEnv type', () => {
  it('types each variable by its table entry', () => {
    const env = parseDaemonEnv({});
    const ms: number = env.DISC_DEBOUNCE_AFTER;
    const flag: boolean = env.MESH_DELTA_XDS;
    const text: string = env.POD_NAMESPACE;
    const maybe: string | undefined = env.REVISION;
    const ca: 'MESHD_RA_CLUSTER_API' | 'MESHD_RA_MESH_API' | undefined = env.EXTERNAL_CA;
    // @ts-expect-error a boolean variable is not a string
    const wrong: string = env.XDS_AUTH;
    // @ts-expect-error a variable without default may be undefined
    const required: string = env.AUDIENCE;
    expect(() => {
      // @ts-expect-error the object is read-only
      env.DISC_PUSH_THROTTLE = 5;
    }).toThrow(TypeError);
    expect([ms, flag, text, maybe, ca, wrong, required]).toHaveLength(7);
  });
});
