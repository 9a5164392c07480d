/**
 * What the agent's DNS proxy forwards to and strips: the `nameserver` and `search` lines of
 * /etc/resolv.conf (resolv.conf(5)). Pure; the caller reads the file.
 */
import { isIP } from 'node:net';

export interface ResolvConf {
  /** Upstream resolvers, `address` with port 53, in file order (at most three are used, as by libc). */
  readonly nameservers: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  /** Search domains in lower case without a final dot. */
  readonly search: ReadonlyArray<string>;
}

/** At most this many nameservers are used (MAXNS of resolv.conf). */
const MAX_NAMESERVERS = 3;

export function parseResolvConf(text: string): ResolvConf {
  const nameservers: Array<{ host: string; port: number }> = [];
  let search: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [key, ...values] = line.split(/\s+/);
    if (key === 'nameserver' && values[0] !== undefined) {
      // a zone index (fe80::1%eth0) is kept: the socket understands it
      const host = values[0];
      if (isIP(host.replace(/%.*$/, '')) !== 0 && nameservers.length < MAX_NAMESERVERS) nameservers.push({ host, port: 53 });
    } else if (key === 'search' || key === 'domain') {
      // the last search or domain line wins (resolv.conf(5))
      search = values.map((v) => v.toLowerCase().replace(/\.$/, '')).filter((v) => v !== '');
    }
  }
  return { nameservers, search };
}
