/**
 * Flags and arguments shared by the diagnosis commands: the xDS connection group XG (spec part 1),
 * durations, and the `[<type>/]<name>[.<namespace>]` form that names a pod.
 */
import { Option, type Command } from 'commander';
import { durationMs, isDuration } from '../../../util/config-duration.js';
import { boolOption, CliError } from '../../runner.js';

/** Adds XG: --authority, --cert-dir, --insecure, --plaintext, --timeout (30s), --xds-address, --xds-label, --xds-port, and -r/--revision. */
export function addXdsFlags(cmd: Command): Command {
  return cmd
    .option('--authority <name>', 'xDS subject alternative name (e.g. meshd.mesh-system.svc).')
    .option('--cert-dir <dir>', 'Directory of certificates for the xDS endpoint (cert-chain.pem, key.pem, root-cert.pem); bypasses the API server.')
    .addOption(boolOption('--insecure', 'Skip server certificate and domain verification (insecure).'))
    .addOption(boolOption('--plaintext', 'Plain-text HTTP/2 to the xDS endpoint, no TLS.'))
    .addOption(new Option('--timeout <duration>', 'How long to wait for an answer.').default('30s'))
    .option('--xds-address <host:port>', 'xDS endpoint of one daemon (else every meshd pod of the mesh namespace).')
    .option('--xds-label <selector>', 'Label selector of control-plane pods.')
    .addOption(new Option('--xds-port <port>', 'xDS port of control-plane pods.').default('15012'))
    .option('-r, --revision <revision>', 'Control plane revision.');
}

/** Milliseconds of a D-typed flag, or a CliError naming it. */
export function durationFlag(flag: string, text: string): number {
  if (!isDuration(text)) throw new CliError(`${flag}: ${JSON.stringify(text)} is not a duration (e.g. 30s, 1m)`);
  return durationMs(text);
}

export interface PodRef {
  /** `deployment`, `pod` … when given as `<type>/`. */
  readonly type: string;
  readonly name: string;
  readonly namespace: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** `[<type>/]<name>[.<namespace>]`, the namespace defaulting to `namespace`; a CliError for a malformed one. */
export function parsePodRef(arg: string, namespace: string): PodRef {
  const slash = arg.indexOf('/');
  const type = slash < 0 ? 'pod' : arg.slice(0, slash).toLowerCase();
  let rest = slash < 0 ? arg : arg.slice(slash + 1);
  let ns = namespace;
  const dot = rest.lastIndexOf('.');
  if (dot > 0) {
    ns = rest.slice(dot + 1);
    rest = rest.slice(0, dot);
  }
  if (!['pod', 'pods', 'po', 'deployment', 'deployments', 'deploy', 'service', 'services', 'svc'].includes(type)) {
    throw new CliError(`${JSON.stringify(arg)}: unknown type ${JSON.stringify(type)} (pod, deployment or service)`);
  }
  if (!DNS_SUBDOMAIN.test(rest)) throw new CliError(`${JSON.stringify(arg)}: ${JSON.stringify(rest)} is not a valid name`);
  if (!DNS_LABEL.test(ns)) throw new CliError(`${JSON.stringify(arg)}: ${JSON.stringify(ns)} is not a valid namespace`);
  const norm = type.startsWith('po') ? 'pod' : type.startsWith('dep') ? 'deployment' : 'service';
  return { type: norm, name: rest, namespace: ns };
}
