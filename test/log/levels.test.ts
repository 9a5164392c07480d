import { ConfigError } from '../../src/util/config-error.js';
import {
  DEFAULT_LOG_OPTIONS,
  LOGGER_SCOPES,
  LOG_SCOPES,
  levelOf,
  logOptionsFromFlags,
  parseScopeLevels,
  parseScopeList,
} from '../../src/log/levels.js';
import { plain, specTable } from '../cli/spec-tables.js';

describe('log scopes', () => {
  it('are the scopes of the spec table', () => {
    const rows = specTable('Log scopes (for `--log_caller`, `--log_output_level`, `--log_stacktrace_level`):');
    const names = rows.flat().map(plain).filter((c) => c !== '');
    expect([...LOG_SCOPES]).toEqual(names);
    expect(LOGGER_SCOPES).not.toContain('all');
    expect(LOGGER_SCOPES).toContain('default');
  });
});

describe('parseScopeLevels', () => {
  it('reads the spec default and per-scope pairs', () => {
    expect(parseScopeLevels('default:info', 'info')).toEqual({ fallback: 'info', scopes: {} });
    const levels = parseScopeLevels('default:info,ads:debug', 'info');
    expect(levels).toEqual({ fallback: 'info', scopes: { ads: 'debug' } });
    expect(levelOf(levels, 'ads')).toBe('debug');
    expect(levelOf(levels, 'model')).toBe('info');
  });

  it('applies default to scopes without their own entry, in any order', () => {
    const levels = parseScopeLevels('ads:debug, default:warn', 'info');
    expect(levelOf(levels, 'ads')).toBe('debug');
    expect(levelOf(levels, 'kube')).toBe('warn');
  });

  it('takes a bare level as the default and `all` as every scope', () => {
    expect(parseScopeLevels('error', 'info')).toEqual({ fallback: 'error', scopes: {} });
    expect(parseScopeLevels('ads:debug,all:none,model:info', 'info')).toEqual({ fallback: 'none', scopes: { model: 'info' } });
    expect(parseScopeLevels('', 'info')).toEqual({ fallback: 'info', scopes: {} });
  });

  it.each([
    ['foo:debug', 'unknown scope "foo" in "foo:debug"'],
    ['ads:loud', 'unknown level "loud" in "ads:loud" (levels: debug, info, warn, error, fatal, none)'],
    ['ADS:debug', 'unknown scope "ADS"'],
    ['trace', 'unknown level "trace"'],
  ])('rejects %j', (text, message) => {
    expect(() => parseScopeLevels(text, 'info')).toThrow(message);
  });
});

describe('parseScopeList', () => {
  it('reads scopes and expands all', () => {
    expect([...parseScopeList('ads, model')]).toEqual(['ads', 'model']);
    expect(parseScopeList('all').size).toBe(LOGGER_SCOPES.length);
    expect(parseScopeList('').size).toBe(0);
    expect(() => parseScopeList('ads,nope')).toThrow('unknown scope "nope"');
  });
});

describe('logOptionsFromFlags', () => {
  it('gives the spec defaults', () => {
    expect(logOptionsFromFlags({})).toEqual(DEFAULT_LOG_OPTIONS);
    expect(DEFAULT_LOG_OPTIONS.targets).toEqual(['stdout']);
    expect(DEFAULT_LOG_OPTIONS.rotateMaxSizeMB).toBe(104857600);
  });

  it('names every bad flag and value', () => {
    let error: unknown;
    try {
      logOptionsFromFlags({ log_output_level: 'ads:verbose', log_caller: 'xyz', log_rotate_max_backups: -1, log_target: [''] });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues).toEqual([
      '--log_output_level: unknown level "verbose" in "ads:verbose" (levels: debug, info, warn, error, fatal, none)',
      '--log_caller: unknown scope "xyz"',
      '--log_rotate_max_backups: -1 is out of range: must be an integer of at least 0',
      '--log_target: empty output path',
    ]);
  });
});
