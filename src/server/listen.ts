/** A listen address as the flags spell it: `:15010`, `127.0.0.1:8080`, `[::1]:15014`. */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

export function formatListen(a: ListenAddress): string {
  return `${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`;
}
