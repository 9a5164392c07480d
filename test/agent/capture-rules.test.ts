/**
 * The capture rules as data (src/agent/capture): flags → plan → iptables-restore input, table by
 * table; bad flags named; a rerun's input deletes the earlier jumps; and the arguments the injector
 * renders for `mesh-init` parse in `mesh-agent capture` as the options they stand for.
 */
import { CaptureOptionError, capturePlan, type CaptureOptions } from '../../src/agent/capture/options.js';
import { captureRulesets, withPreviousRemoved } from '../../src/agent/capture/rules.js';
import { buildAgentProgram, main } from '../../src/cli/mesh-agent.js';
import { createCli } from '../../src/cli/runner.js';
import type { CliIO } from '../../src/cli/io.js';

const rulesOf = (o: CaptureOptions, family: 'ipv4' | 'ipv6' = 'ipv4'): string[] => {
  const r = captureRulesets(capturePlan(o)).find((x) => x.family === family);
  return r ? r.text.split('\n').filter((l) => l.startsWith('-A ')) : [];
};

const COMMON_HEAD = ['-A MESH_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006', '-A MESH_REDIRECT -p tcp -j REDIRECT --to-ports 15001'];
const OWNER_V4 = [
  '-A MESH_OUTPUT -s 127.0.0.6/32 -o lo -j RETURN',
  '-A MESH_OUTPUT ! -d 127.0.0.1/32 -o lo -m owner --uid-owner 1337 -j MESH_INBOUND',
  '-A MESH_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN',
  '-A MESH_OUTPUT -m owner --uid-owner 1337 -j RETURN',
  '-A MESH_OUTPUT ! -d 127.0.0.1/32 -o lo -m owner --gid-owner 1337 -j MESH_INBOUND',
  '-A MESH_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN',
  '-A MESH_OUTPUT -m owner --gid-owner 1337 -j RETURN',
  '-A MESH_OUTPUT -d 127.0.0.1/32 -j RETURN',
];

describe('capture rules', () => {
  it('the injector\'s defaults: everything in and out captured except the proxy\'s ports and its own traffic', () => {
    const r = captureRulesets(capturePlan({ mode: 'REDIRECT', includeOutboundIPRanges: '*', excludeOutboundIPRanges: '', includeInboundPorts: '*', excludeInboundPorts: '15020,15021,15090' }));
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ family: 'ipv4', restoreCommand: 'iptables-restore', saveCommand: 'iptables-save' });
    expect(r[0]!.text).toBe(
      [
        '*nat',
        ':MESH_INBOUND - [0:0]',
        ':MESH_IN_REDIRECT - [0:0]',
        ':MESH_OUTPUT - [0:0]',
        ':MESH_REDIRECT - [0:0]',
        '-A PREROUTING -p tcp -j MESH_INBOUND',
        '-A OUTPUT -p tcp -j MESH_OUTPUT',
        ...COMMON_HEAD,
        '-A MESH_INBOUND -p tcp --dport 15020 -j RETURN',
        '-A MESH_INBOUND -p tcp --dport 15021 -j RETURN',
        '-A MESH_INBOUND -p tcp --dport 15090 -j RETURN',
        '-A MESH_INBOUND -p tcp -j MESH_IN_REDIRECT',
        ...OWNER_V4,
        '-A MESH_OUTPUT -j MESH_REDIRECT',
        'COMMIT',
        '',
      ].join('\n'),
    );
  });

  it.each<[string, CaptureOptions, string[]]>([
    [
      'listed inbound ports only',
      { includeInboundPorts: '9080,8080,9080' },
      [...COMMON_HEAD, '-A MESH_INBOUND -p tcp --dport 8080 -j MESH_IN_REDIRECT', '-A MESH_INBOUND -p tcp --dport 9080 -j MESH_IN_REDIRECT', ...OWNER_V4, '-A MESH_OUTPUT -j MESH_REDIRECT'],
    ],
    [
      'no inbound capture: no PREROUTING jump, the proxy over lo is not sent inbound',
      { includeInboundPorts: '' },
      [...COMMON_HEAD, ...OWNER_V4.filter((l) => !l.includes('MESH_INBOUND')), '-A MESH_OUTPUT -j MESH_REDIRECT'],
    ],
    [
      'listed ranges, excluded ranges and ports, included ports',
      { includeOutboundIPRanges: '10.0.0.0/8, 172.16.0.0/12', excludeOutboundIPRanges: '10.96.0.10', includeOutboundPorts: '443', excludeOutboundPorts: '5432,3306', includeInboundPorts: '' },
      [
        ...COMMON_HEAD,
        '-A MESH_OUTPUT -p tcp --dport 3306 -j RETURN',
        '-A MESH_OUTPUT -p tcp --dport 5432 -j RETURN',
        ...OWNER_V4.filter((l) => !l.includes('MESH_INBOUND')),
        '-A MESH_OUTPUT -p tcp --dport 443 -j MESH_REDIRECT',
        '-A MESH_OUTPUT -d 10.96.0.10/32 -j RETURN',
        '-A MESH_OUTPUT -d 10.0.0.0/8 -j MESH_REDIRECT',
        '-A MESH_OUTPUT -d 172.16.0.0/12 -j MESH_REDIRECT',
      ],
    ],
    [
      'no outbound range: only the included ports are redirected',
      { includeOutboundIPRanges: '', includeOutboundPorts: '80', includeInboundPorts: '' },
      [...COMMON_HEAD, ...OWNER_V4.filter((l) => !l.includes('MESH_INBOUND')), '-A MESH_OUTPUT -p tcp --dport 80 -j MESH_REDIRECT'],
    ],
    [
      'other ports and ids',
      { proxyPort: '16001', inboundCapturePort: '16006', proxyUid: '2000', proxyGid: '3000', includeInboundPorts: '' },
      [
        '-A MESH_IN_REDIRECT -p tcp -j REDIRECT --to-ports 16006',
        '-A MESH_REDIRECT -p tcp -j REDIRECT --to-ports 16001',
        '-A MESH_OUTPUT -s 127.0.0.6/32 -o lo -j RETURN',
        '-A MESH_OUTPUT -o lo -m owner ! --uid-owner 2000 -j RETURN',
        '-A MESH_OUTPUT -m owner --uid-owner 2000 -j RETURN',
        '-A MESH_OUTPUT -o lo -m owner ! --gid-owner 3000 -j RETURN',
        '-A MESH_OUTPUT -m owner --gid-owner 3000 -j RETURN',
        '-A MESH_OUTPUT -d 127.0.0.1/32 -j RETURN',
        '-A MESH_OUTPUT -j MESH_REDIRECT',
      ],
    ],
  ])('%s', (_name, options, expected) => {
    expect(rulesOf(options).filter((l) => !/^-A (PREROUTING|OUTPUT) /.test(l))).toEqual(expected);
    const jumps = captureRulesets(capturePlan(options))[0]!.jumps;
    expect(jumps).toEqual(options.includeInboundPorts === '' ? ['OUTPUT -p tcp -j MESH_OUTPUT'] : ['PREROUTING -p tcp -j MESH_INBOUND', 'OUTPUT -p tcp -j MESH_OUTPUT']);
  });

  it('IPv6 when asked: ip6tables-restore, ::1 and ::6, each family only its own ranges', () => {
    const o: CaptureOptions = { includeOutboundIPRanges: '10.0.0.0/8,fd00::/8', excludeOutboundIPRanges: 'fd00:1::/64,10.1.0.0/16', ipv6: true };
    const sets = captureRulesets(capturePlan(o));
    expect(sets.map((s) => [s.family, s.restoreCommand])).toEqual([['ipv4', 'iptables-restore'], ['ipv6', 'ip6tables-restore']]);
    const v6 = rulesOf(o, 'ipv6');
    expect(v6).toContain('-A MESH_OUTPUT -s ::6/128 -o lo -j RETURN');
    expect(v6).toContain('-A MESH_OUTPUT ! -d ::1/128 -o lo -m owner --uid-owner 1337 -j MESH_INBOUND');
    expect(v6.slice(-2)).toEqual(['-A MESH_OUTPUT -d fd00:1::/64 -j RETURN', '-A MESH_OUTPUT -d fd00::/8 -j MESH_REDIRECT']);
    expect(rulesOf(o, 'ipv4').slice(-2)).toEqual(['-A MESH_OUTPUT -d 10.1.0.0/16 -j RETURN', '-A MESH_OUTPUT -d 10.0.0.0/8 -j MESH_REDIRECT']);
  });

  it('IPv6 ranges without --ipv6: IPv4 rules only, and a warning saying IPv6 goes out directly', () => {
    const plan = capturePlan({ includeOutboundIPRanges: 'fd00::/8' });
    expect(captureRulesets(plan).map((s) => s.family)).toEqual(['ipv4']);
    expect(plan.warnings).toEqual([expect.stringContaining('--include-outbound-ip-ranges: fd00::/8 are IPv6 ranges, but IPv6 is not captured')]);
  });

  it('interception mode NONE writes nothing', () => {
    expect(captureRulesets(capturePlan({ mode: 'NONE' }))).toEqual([]);
  });

  it.each<[CaptureOptions, string]>([
    [{ mode: 'TPROXY' }, '--interception-mode: TPROXY is not supported by mesh-agent capture'],
    [{ mode: 'redirect' }, '--interception-mode: "redirect" is not one of REDIRECT, NONE'],
    [{ proxyPort: '0' }, '--proxy-port: 0 is not a port (1-65535)'],
    [{ inboundCapturePort: 'http' }, '--inbound-capture-port: "http" is not a port number'],
    [{ inboundCapturePort: '15001' }, '--inbound-capture-port: 15001 is also the outbound proxy port'],
    [{ proxyUid: '-1' }, '--proxy-uid: "-1" is not a numeric id'],
    [{ includeOutboundIPRanges: '*,10.0.0.0/8' }, '--include-outbound-ip-ranges: `*` stands alone'],
    [{ excludeOutboundIPRanges: '*' }, '--exclude-outbound-ip-ranges: `*` is not allowed here'],
    [{ excludeOutboundIPRanges: '10.0.0.300/8' }, '--exclude-outbound-ip-ranges: "10.0.0.300/8": "10.0.0.300" is not an IP address'],
    [{ includeOutboundIPRanges: 'fd00::/129' }, '--include-outbound-ip-ranges: "fd00::/129": prefix length must be 0-128'],
    [{ excludeInboundPorts: '*' }, '--exclude-inbound-ports: `*` is not allowed here'],
    [{ includeInboundPorts: '80,70000' }, '--include-inbound-ports: 70000 is not a port (1-65535)'],
    [{ excludeOutboundPorts: '22-25' }, '--exclude-outbound-ports: "22-25" is not a port number'],
  ])('refuses %j naming the flag', (options, message) => {
    expect(() => capturePlan(options)).toThrow(CaptureOptionError);
    expect(() => capturePlan(options)).toThrow(message);
  });

  it('--redirect-dns: the application\'s port-53 UDP and TCP go to the agent\'s DNS proxy, the proxy\'s own DNS goes out', () => {
    const r = captureRulesets(capturePlan({ redirectDns: true }))[0]!;
    const lines = r.text.split('\n');
    expect(lines).toContain(':MESH_DNS - [0:0]');
    expect(r.jumps).toEqual(['PREROUTING -p tcp -j MESH_INBOUND', 'OUTPUT -p udp --dport 53 -j MESH_DNS', 'OUTPUT -p tcp --dport 53 -j MESH_DNS', 'OUTPUT -p tcp -j MESH_OUTPUT']);
    expect(lines.filter((l) => l.startsWith('-A MESH_DNS'))).toEqual([
      '-A MESH_DNS -m owner --uid-owner 1337 -j RETURN',
      '-A MESH_DNS -m owner --gid-owner 1337 -j RETURN',
      '-A MESH_DNS -p udp -j REDIRECT --to-ports 15053',
      '-A MESH_DNS -p tcp -j REDIRECT --to-ports 15053',
    ]);
    // the DNS jumps come before the TCP capture, so TCP port 53 reaches the DNS proxy, not 15001
    expect(lines.indexOf('-A OUTPUT -p tcp --dport 53 -j MESH_DNS')).toBeLessThan(lines.indexOf('-A OUTPUT -p tcp -j MESH_OUTPUT'));
    // without the flag, no DNS chain at all
    expect(captureRulesets(capturePlan({}))[0]!.text).not.toContain('MESH_DNS');
    // a rerun without DNS capture removes the earlier run's DNS jumps
    const rerun = withPreviousRemoved(captureRulesets(capturePlan({}))[0]!, r.text);
    expect(rerun).toContain('-D OUTPUT -p udp --dport 53 -j MESH_DNS\n');
  });

  it('a rerun deletes the jumps an earlier run left, before adding its own', () => {
    const r = captureRulesets(capturePlan({}))[0]!;
    const saved = ['*nat', ':PREROUTING ACCEPT [0:0]', '-A PREROUTING -p tcp -j MESH_INBOUND', '-A OUTPUT -p tcp -j MESH_OUTPUT', '-A OUTPUT -d 10.0.0.1/32 -j KUBE', '-A MESH_OUTPUT -j MESH_REDIRECT', 'COMMIT'].join('\n');
    const text = withPreviousRemoved(r, saved);
    const lines = text.split('\n');
    expect(lines.filter((l) => l.startsWith('-D '))).toEqual(['-D PREROUTING -p tcp -j MESH_INBOUND', '-D OUTPUT -p tcp -j MESH_OUTPUT']);
    expect(lines.indexOf('-D OUTPUT -p tcp -j MESH_OUTPUT')).toBeLessThan(lines.indexOf('-A OUTPUT -p tcp -j MESH_OUTPUT'));
    expect(withPreviousRemoved(r, '*nat\nCOMMIT\n')).toBe(r.text);
  });
});

function io(): CliIO & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return { out: (t) => void (out += t), err: (t) => void (err += t), env: {}, isTTY: false, readStdin: () => Promise.resolve(''), stdout: () => out, stderr: () => err };
}

describe('mesh-agent capture (command)', () => {
  it('the injector\'s mesh-init arguments parse as the options they stand for (--dry-run prints the rules)', async () => {
    const t = io();
    const code = await main(['capture', '-p', '15001', '-z', '15006', '-u', '1337', '-g', '1337', '-m', 'REDIRECT', '-i', '*', '-x', '10.96.0.0/12', '-b', '*', '-d', '15020,15021,15090', '-q', '443', '-o', '5432', '--log_output_level=default:info', '--dry-run'], t);
    expect(t.stderr()).toBe('');
    expect(code).toBe(0);
    expect(t.stdout()).toContain('# iptables-restore --noflush (ipv4)\n*nat\n');
    for (const line of ['-A MESH_INBOUND -p tcp --dport 15090 -j RETURN', '-A MESH_OUTPUT -p tcp --dport 5432 -j RETURN', '-A MESH_OUTPUT -p tcp --dport 443 -j MESH_REDIRECT', '-A MESH_OUTPUT -d 10.96.0.0/12 -j RETURN']) {
      expect(t.stdout()).toContain(`${line}\n`);
    }
  });

  it('--ipv6 prints both families; a bad flag exits 1 naming it; NONE says so', async () => {
    const both = io();
    expect(await main(['capture', '--ipv6', '--dry-run'], both)).toBe(0);
    expect(both.stdout()).toContain('# ip6tables-restore --noflush (ipv6)\n');
    const bad = io();
    expect(await main(['capture', '-b', 'x', '--dry-run'], bad)).toBe(1);
    expect(bad.stderr()).toBe('error: --include-inbound-ports: "x" is not a port number\n');
    const none = io();
    expect(await main(['capture', '-m', 'NONE'], none)).toBe(0);
    expect(none.stderr()).toBe('capture: interception mode NONE: no rules written\n');
    const level = io();
    expect(await main(['capture', '--log_output_level=capture', '--dry-run'], level)).toBe(1);
    expect(level.stderr()).toContain('--log_output_level: "capture" is not <scope>:<level>');
  });

  it('has help with examples', () => {
    const program = buildAgentProgram(createCli(io()));
    expect(program.commands.map((c) => c.name())).toContain('capture');
  });
});
