/**
 * The `--meshConfig` file: YAML in the MeshConfig shape. A missing file means defaults; an invalid
 * file is refused with field-level reasons (at start-up the daemon stops; on a later edit the last
 * good settings stay in force).
 */
import { readFile, stat } from 'node:fs/promises';
import { watchFile, unwatchFile } from 'node:fs';
import type { Logger } from 'pino';
import { MeshConfigSchema, type MeshConfig } from '../gen/config/schemas.js';
import { durationMs } from '../util/config-duration.js';
import { ConfigError } from '../util/config-error.js';
import { parseYamlDocument } from '../config/yaml-document.js';
import { clusterLocalHostsOf } from '../controllers/service-export/cluster-local.js';
import { DEFAULT_MESH_SETTINGS, type MeshSettings } from '../model/mesh-settings.js';

export function meshSettingsFrom(mc: MeshConfig, base: { domain: string; clusterId: string }): MeshSettings {
  const d = DEFAULT_MESH_SETTINGS;
  return Object.freeze({
    rootNamespace: mc.rootNamespace || d.rootNamespace,
    trustDomain: mc.trustDomain || d.trustDomain,
    domain: base.domain,
    clusterId: base.clusterId,
    outboundTrafficPolicy: mc.outboundTrafficPolicy?.mode === 'REGISTRY_ONLY' ? 'REGISTRY_ONLY' : 'ALLOW_ANY',
    defaultServiceExportTo: mc.defaultServiceExportTo?.length ? mc.defaultServiceExportTo : d.defaultServiceExportTo,
    defaultVirtualServiceExportTo: mc.defaultVirtualServiceExportTo?.length ? mc.defaultVirtualServiceExportTo : d.defaultVirtualServiceExportTo,
    defaultDestinationRuleExportTo: mc.defaultDestinationRuleExportTo?.length ? mc.defaultDestinationRuleExportTo : d.defaultDestinationRuleExportTo,
    connectTimeoutMs: mc.connectTimeout ? durationMs(mc.connectTimeout) : d.connectTimeoutMs,
    protocolDetectionTimeoutMs: mc.protocolDetectionTimeout ? durationMs(mc.protocolDetectionTimeout) : d.protocolDetectionTimeoutMs,
    enableAutoMtls: mc.enableAutoMtls ?? d.enableAutoMtls,
    enableTracing: mc.enableTracing ?? d.enableTracing,
    accessLogFile: mc.accessLogFile ?? d.accessLogFile,
    clusterLocalHosts: clusterLocalHostsOf(mc),
    ...(mc.trustDomainAliases?.length ? { trustDomainAliases: mc.trustDomainAliases } : {}),
    ...(mc.defaultProviders
      ? { defaultProviders: { tracing: mc.defaultProviders.tracing ?? [], metrics: mc.defaultProviders.metrics ?? [], accessLogging: mc.defaultProviders.accessLogging ?? [] } }
      : {}),
    ...(mc.defaultConfig ? { proxyDefaults: mc.defaultConfig } : {}),
    ...(mc.extensionProviders?.length ? { extensionProviders: mc.extensionProviders } : {}),
  });
}

export function parseMeshConfig(text: string, origin: string): MeshConfig {
  const mc = parseYamlDocument(text, origin, MeshConfigSchema);
  const issues = extensionProviderIssues(mc);
  if (issues.length > 0) throw new ConfigError(issues.map((i) => `${origin}: ${i}`));
  return mc;
}

/** What the schema cannot say about `extensionProviders`: unique names, one kind each, a service and port. */
function extensionProviderIssues(mc: MeshConfig): string[] {
  const issues: string[] = [];
  const seen = new Set<string>();
  (mc.extensionProviders ?? []).forEach((p, i) => {
    const at = `extensionProviders[${i}]`;
    if (seen.has(p.name)) issues.push(`${at}.name: "${p.name}" is used by an earlier provider`);
    seen.add(p.name);
    const kind = p.envoyExtAuthzHttp ?? p.envoyExtAuthzGrpc;
    if (!kind) {
      issues.push(`${at}: set envoyExtAuthzHttp or envoyExtAuthzGrpc`);
      return;
    }
    const field = p.envoyExtAuthzHttp ? 'envoyExtAuthzHttp' : 'envoyExtAuthzGrpc';
    if (!kind.service) issues.push(`${at}.${field}.service: required`);
    if (!kind.port || kind.port > 65535) issues.push(`${at}.${field}.port: must be 1-65535`);
    if (kind.statusOnError !== undefined && !/^[1-5][0-9][0-9]$/.test(kind.statusOnError)) issues.push(`${at}.${field}.statusOnError: "${kind.statusOnError}" is not an HTTP status`);
  });
  return issues;
}

/**
 * A settings file read again when it changes (`--meshConfig`, `--networksConfig`). A file that was
 * read and then cannot be (removed, made unreadable, its directory gone) is a fault, not an empty
 * file: the last good settings stay, one error line says so per loss, and `lost` is told (the
 * daemon counts it in disc_mesh_config_lost). It is read again once it is back.
 */
export class SettingsFileFault {
  private lostSince?: string;

  constructor(
    private readonly path: string,
    private readonly what: string,
    private readonly log: Logger,
    private readonly lost: () => void = () => undefined,
  ) {}

  /** The file's text, or undefined while it cannot be read (reported once per loss). */
  async read(): Promise<string | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      const reason = (e as NodeJS.ErrnoException).code ?? (e instanceof Error ? e.message : String(e));
      if (this.lostSince === undefined) {
        this.lostSince = reason;
        this.lost();
        this.log.error({ path: this.path, reason }, `${this.what} ${this.path} cannot be read (${reason}): keeping the last good settings until it is back`);
      }
      return undefined;
    }
    if (this.lostSince !== undefined) {
      this.lostSince = undefined;
      this.log.warn({ path: this.path }, `${this.what} ${this.path} is readable again`);
    }
    return text;
  }
}

export class MeshConfigWatcher {
  private listeners: Array<(m: MeshSettings) => void> = [];
  private watching = false;
  private current?: MeshSettings;
  private readonly fault: SettingsFileFault;

  /** `lost`: told each time the file, once read, can no longer be read (its last good settings stay). */
  constructor(
    private readonly path: string,
    private readonly base: { domain: string; clusterId: string },
    private readonly log: Logger,
    lost?: () => void,
  ) {
    this.fault = new SettingsFileFault(path, 'mesh config file', log, lost);
  }

  /** Reads the file (defaults when absent) and starts watching it. Throws ConfigError when invalid. */
  async load(): Promise<MeshSettings> {
    const exists = await stat(this.path).then(() => true, () => false);
    let settings: MeshSettings;
    if (!exists) {
      this.log.info({ path: this.path }, 'mesh config file absent: using defaults');
      settings = meshSettingsFrom({}, this.base);
    } else {
      settings = meshSettingsFrom(parseMeshConfig(await readFile(this.path, 'utf8'), this.path), this.base);
      this.seen = true;
    }
    this.current = settings;
    watchFile(this.path, { interval: 1000 }, () => void this.reload());
    this.watching = true;
    return settings;
  }

  onChange(l: (m: MeshSettings) => void): void {
    this.listeners.push(l);
  }

  stop(): void {
    if (this.watching) unwatchFile(this.path);
    this.watching = false;
  }

  /** The file was read once: from then on, not being able to read it is a fault (SettingsFileFault). */
  private seen = false;

  private async reload(): Promise<void> {
    try {
      // absent from the start: the defaults stay until it appears
      if (!this.seen && !(await stat(this.path).then(() => true, () => false))) return;
      const text = await this.fault.read();
      if (text === undefined) return;
      this.seen = true;
      const settings = meshSettingsFrom(parseMeshConfig(text, this.path), this.base);
      if (JSON.stringify(settings) === JSON.stringify(this.current)) return;
      this.current = settings;
      this.log.info({ path: this.path }, 'mesh config reloaded');
      for (const l of this.listeners) l(settings);
    } catch (e) {
      this.log.warn({ path: this.path, err: e instanceof Error ? e.message : String(e) }, 'mesh config rejected; keeping the previous settings');
    }
  }
}
