/**
 * `mesh-agent capture`: the `mesh-init` step of an injected pod. Writes the redirect rules of the
 * pod's network namespace (outbound TCP to the proxy's 15001, inbound to 15006, the proxy's own
 * uid/gid 1337 and the annotated exclusions left alone) with iptables-restore, or prints them with
 * `--dry-run`. The flags are those the injector renders (src/inject/templates.ts `captureArgs`);
 * the rules come from src/agent/capture.
 */
import { Option, type Command } from 'commander';
import { CaptureApplyError, applyRulesets } from '../../agent/capture/apply.js';
import { CaptureOptionError, capturePlan, type CaptureOptions } from '../../agent/capture/options.js';
import { captureRulesets } from '../../agent/capture/rules.js';
import { PROXY_GID, PROXY_PORTS, PROXY_UID } from '../../agent/names.js';
import { CliError, boolOption, boolValue, type Cli } from '../runner.js';

interface CaptureFlags {
  readonly proxyPort: string;
  readonly inboundCapturePort: string;
  readonly proxyUid: string;
  readonly proxyGid: string;
  readonly interceptionMode: string;
  readonly includeOutboundIpRanges: string;
  readonly excludeOutboundIpRanges: string;
  readonly includeInboundPorts: string;
  readonly excludeInboundPorts: string;
  readonly includeOutboundPorts: string;
  readonly excludeOutboundPorts: string;
  readonly ipv6?: unknown;
  readonly redirectDns?: unknown;
  readonly dryRun?: unknown;
  readonly log_output_level: string;
}

const LEVELS = ['debug', 'info', 'warn', 'error', 'fatal', 'none'] as const;
type Level = (typeof LEVELS)[number];

/** The level of the `capture` scope (else `default`) in `<scope>:<level>[,...]`. */
export function captureLogLevel(spec: string): Level {
  const levels = new Map<string, Level>();
  for (const part of spec.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const [scope, level, extra] = part.split(':');
    if (!scope || !level || extra !== undefined || !(LEVELS as readonly string[]).includes(level)) {
      throw new CliError(`--log_output_level: ${JSON.stringify(part)} is not <scope>:<level> (levels ${LEVELS.join(', ')})`);
    }
    levels.set(scope, level as Level);
  }
  return levels.get('capture') ?? levels.get('default') ?? 'info';
}

const shows = (level: Level, at: Level): boolean => LEVELS.indexOf(level) <= LEVELS.indexOf(at);

export function registerCaptureCommand(program: Command, cli: Cli): Command {
  return program
    .command('capture')
    .description('Writes the traffic capture rules of this network namespace (the mesh-init step of an injected pod): outbound TCP to the proxy, inbound TCP to its inbound port, the proxy\'s own traffic left alone.')
    .option('-p, --proxy-port <port>', 'Port of the proxy\'s outbound listener, where outbound TCP is redirected.', String(PROXY_PORTS.outbound))
    .option('-z, --inbound-capture-port <port>', 'Port of the proxy\'s inbound listener, where inbound TCP is redirected.', String(PROXY_PORTS.inbound))
    .option('-u, --proxy-uid <uid>', 'User id whose traffic is never captured (the proxy\'s).', String(PROXY_UID))
    .option('-g, --proxy-gid <gid>', 'Group id whose traffic is never captured (the proxy\'s).', String(PROXY_GID))
    .addOption(new Option('-m, --interception-mode <mode>', 'REDIRECT, or NONE for no rules (TPROXY is refused).').default('REDIRECT'))
    .option('-i, --include-outbound-ip-ranges <cidrs>', 'Outbound destination ranges redirected to the proxy: "*" for all, comma-separated CIDRs, or "" for none.', '*')
    .option('-x, --exclude-outbound-ip-ranges <cidrs>', 'Outbound destination ranges never redirected (comma-separated CIDRs).', '')
    .option('-b, --include-inbound-ports <ports>', 'Inbound ports redirected to the proxy: "*" for all, a comma-separated list, or "" for none.', '*')
    .option('-d, --exclude-inbound-ports <ports>', 'Inbound ports never redirected (with -b "*").', '')
    .option('-q, --include-outbound-ports <ports>', 'Outbound ports redirected whatever the destination.', '')
    .option('-o, --exclude-outbound-ports <ports>', 'Outbound ports never redirected.', '')
    .addOption(boolOption('--ipv6', 'Also write the IPv6 rules (ip6tables-restore); IPv6 ranges of -i/-x apply to them.'))
    .addOption(boolOption('--redirect-dns', `Redirect the application's DNS (UDP and TCP port 53) to the agent's DNS proxy on ${PROXY_PORTS.dns}; the proxy's uid/gid are not redirected (node metadata DNS_CAPTURE).`))
    .addOption(boolOption('--dry-run', 'Print the rules instead of applying them.'))
    .option('--log_output_level <levels>', 'Comma-separated <scope>:<level> (scope capture or default): info prints a summary, debug the rules applied.', 'default:info')
    .action(
      cli.action(async (flags: CaptureFlags) => {
        const level = captureLogLevel(flags.log_output_level);
        const options: CaptureOptions = {
          proxyPort: flags.proxyPort,
          inboundCapturePort: flags.inboundCapturePort,
          proxyUid: flags.proxyUid,
          proxyGid: flags.proxyGid,
          mode: flags.interceptionMode,
          includeOutboundIPRanges: flags.includeOutboundIpRanges,
          excludeOutboundIPRanges: flags.excludeOutboundIpRanges,
          includeInboundPorts: flags.includeInboundPorts,
          excludeInboundPorts: flags.excludeInboundPorts,
          includeOutboundPorts: flags.includeOutboundPorts,
          excludeOutboundPorts: flags.excludeOutboundPorts,
          ipv6: boolValue(flags.ipv6, '--ipv6'),
          redirectDns: boolValue(flags.redirectDns, '--redirect-dns'),
        };
        let plan;
        try {
          plan = capturePlan(options);
        } catch (err) {
          if (err instanceof CaptureOptionError) throw new CliError(err.message);
          throw err;
        }
        let stderr = shows(level, 'warn') ? plan.warnings.map((w) => `warning: ${w}\n`).join('') : '';
        const rulesets = captureRulesets(plan);
        if (rulesets.length === 0) {
          if (shows(level, 'info')) stderr += 'capture: interception mode NONE: no rules written\n';
          return { stderr };
        }
        if (boolValue(flags.dryRun, '--dry-run')) {
          return { stdout: rulesets.map((r) => `# ${r.restoreCommand} --noflush (${r.family})\n${r.text}`).join('\n'), stderr };
        }
        try {
          const applied = await applyRulesets(rulesets);
          for (const a of applied) {
            if (shows(level, 'debug')) stderr += `capture: ${a.command} (${a.family}):\n${a.text}`;
            if (shows(level, 'info')) {
              stderr += `capture: ${a.family} rules applied (outbound TCP -> ${plan.proxyPort}, inbound TCP -> ${plan.inboundCapturePort}, ${plan.dnsPort !== undefined ? `, DNS (port 53) -> ${plan.dnsPort}` : ''}, uid ${plan.proxyUid} / gid ${plan.proxyGid} not captured${a.replacedPrevious ? '; replaced an earlier run\'s rules' : ''})\n`;
            }
          }
          return { stderr };
        } catch (err) {
          if (err instanceof CaptureApplyError) throw new CliError(err.message);
          throw err;
        }
      }),
    );
}
