/** Messages between the benchmark runner (main.ts) and the client driver process (driver.ts), over the fork IPC channel. */
import type { TypeKey } from './decode.js';

export type ClientKind = 'sidecar' | 'grpc';

/** One simulated client as the runner names it (naming.ts `clientSpec`). */
export interface ClientSpec {
  readonly id: string;
  readonly cluster: string;
  readonly metadata: Record<string, unknown>;
  readonly userAgent: string;
  /** grpc: the listener the client dials (`host:port`). */
  readonly target?: string;
}

export interface StartCommand {
  readonly cmd: 'start';
  /** `127.0.0.1:<port>` of the daemon's xDS listener. */
  readonly addr: string;
  readonly kind: ClientKind;
  readonly clients: number;
  readonly services: number;
  readonly streamsPerChannel: number;
  /** HTTP/2 initial stream and connection window of the client channels, bytes (0: Node's 64 KiB default). */
  readonly windowBytes: number;
  /** grpc: percent of the clients that dial service 0 (see naming.ts). */
  readonly hotPercent: number;
  /** Give up waiting for complete configs after this long. */
  readonly timeoutMs: number;
  /** Every client (the Go load generator names none itself; the Node driver ignores it). */
  readonly clientSpecs: ReadonlyArray<ClientSpec>;
  /** DeltaAggregatedResources instead of StreamAggregatedResources (Go load generator only). */
  readonly delta: boolean;
}

/** What "the change arrived" means: a signature of a resource of one type contains every string. */
export interface Probe {
  readonly type: TypeKey;
  /** RDS: virtual host name; EDS: cluster name. */
  readonly key: string;
  readonly mustContain: ReadonlyArray<string>;
}

export interface ArmCommand {
  readonly cmd: 'arm';
  readonly probe: Probe;
  /** Index of the service whose config changes (proxyless clients watching it are expected to receive it). */
  readonly serviceIndex: number;
  /** Indexes of the clients expected to receive the change (computed by the runner). */
  readonly expected: ReadonlyArray<number>;
}

export interface MeasureCommand {
  readonly cmd: 'measure';
  /** process.hrtime.bigint() (CLOCK_MONOTONIC, shared by processes on the host) just before the file was written, as a decimal string. */
  readonly writtenAtNs: string;
  readonly timeoutMs: number;
  /** After the expected clients have the change, wait until no response arrived for this long. */
  readonly quietMs: number;
}

export interface StopCommand {
  readonly cmd: 'stop';
}

export type DriverCommand = StartCommand | ArmCommand | MeasureCommand | StopCommand;

export type PerType = Record<TypeKey, number>;

export interface InitialResult {
  readonly clients: number;
  readonly complete: number;
  readonly failedStreams: number;
  /** Per complete client: stream open → complete config ACKed, ms, sorted ascending. */
  readonly completionMs: number[];
  /** First stream opened → last client complete (or timeout), ms. */
  readonly wallMs: number;
  /** Time to open all streams, ms. */
  readonly openMs: number;
  readonly responses: PerType;
  readonly bytes: PerType;
  readonly driverCpuS: number;
  readonly decodes: number;
  readonly memoHits: number;
  readonly errors: string[];
  readonly timedOut: boolean;
  /** Name tables received and ACKed by clients with DNS_CAPTURE=true (Go driver; docs/adr/0187). */
  readonly nameTables?: number;
  readonly nameTableBytes?: number;
}

export interface EditResult {
  /** Clients expected to receive the change. */
  readonly expected: number;
  /** Per expected client that ACKed the change: file write → ACK, ms, sorted ascending. */
  readonly latenciesMs: number[];
  /** Clients that received any response in the window. */
  readonly gotAny: number;
  /** Of those, clients that were not expected to receive the change. */
  readonly unexpectedGotAny: number;
  readonly responses: PerType;
  readonly bytes: PerType;
  /** Clients that received at least one response of each type. */
  readonly clientsByType: PerType;
  /** File write → first response in the window, ms. */
  readonly firstResponseMs: number;
  /** File write → last response in the window, ms. */
  readonly lastResponseMs: number;
  readonly driverCpuS: number;
  readonly timedOut: boolean;
  readonly failedStreams: number;
  /** Name tables received during the window (Go driver; docs/adr/0187). */
  readonly nameTables?: number;
  readonly nameTableBytes?: number;
}

export type DriverEvent =
  | { readonly ev: 'loaded' }
  | { readonly ev: 'initial'; readonly result: InitialResult }
  | { readonly ev: 'armed' }
  | { readonly ev: 'edit'; readonly result: EditResult }
  | { readonly ev: 'stopped' }
  | { readonly ev: 'fatal'; readonly message: string };
