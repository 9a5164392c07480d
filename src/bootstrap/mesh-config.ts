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

export class MeshConfigWatcher {
  private listeners: Array<(m: MeshSettings) => void> = [];
  private watching = false;
  private current?: MeshSettings;

  constructor(
    private readonly path: string,
    private readonly base: { domain: string; clusterId: string },
    private readonly log: Logger,
  ) {}

  /** Reads the file (defaults when absent) and starts watching it. Throws ConfigError when invalid. */
  async load(): Promise<MeshSettings> {
    const settings = await this.read();
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

  private async read(): Promise<MeshSettings> {
    const exists = await stat(this.path).then(() => true, () => false);
    if (!exists) {
      this.log.info({ path: this.path }, 'mesh config file absent: using defaults');
      return meshSettingsFrom({}, this.base);
    }
    return meshSettingsFrom(parseMeshConfig(await readFile(this.path, 'utf8'), this.path), this.base);
  }

  private async reload(): Promise<void> {
    try {
      const settings = await this.read();
      if (JSON.stringify(settings) === JSON.stringify(this.current)) return;
      this.current = settings;
      this.log.info({ path: this.path }, 'mesh config reloaded');
      for (const l of this.listeners) l(settings);
    } catch (e) {
      this.log.warn({ path: this.path, err: e instanceof Error ? e.message : String(e) }, 'mesh config rejected; keeping the previous settings');
    }
  }
}
