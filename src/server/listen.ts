import type { ListenAddr } from '../config/discovery-flags.js';

export type ListenAddress = ListenAddr;

/** `host:port` for a listen address; an empty host means all addresses. */
export function formatListen(a: ListenAddress): string {
  const host = a.host === '' ? '0.0.0.0' : a.host;
  return `${host.includes(':') ? `[${host}]` : host}:${a.port}`;
}
