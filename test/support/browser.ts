/**
 * A real headless Chromium (Debian's `chromium` package, /usr/bin/chromium) driven with
 * playwright-core, for tests of the pages the daemon serves. Each launch gets a fresh profile
 * directory and the flags that keep a test browser quiet and offline. `chromiumPath()` is
 * undefined where no Chromium is installed. `browserSkipReason()` decides what a browser test does
 * then: skip with one line saying why where Chromium could not be installed (.ci/run installs it and
 * sets MESH_TEST_CHROMIUM_UNAVAILABLE when it cannot), fail under CI otherwise.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext } from 'playwright-core';

export const CHROMIUM = process.env.MESH_TEST_CHROMIUM ?? '/usr/bin/chromium';

export function chromiumPath(): string | undefined {
  return fs.existsSync(CHROMIUM) ? CHROMIUM : undefined;
}

/**
 * Why browser tests skip on this machine, or undefined when they run. Throws under CI when Chromium
 * is missing and nothing said it could not be installed: a browser test never passes by not running.
 */
export function browserSkipReason(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (chromiumPath()) return undefined;
  const reason = env.MESH_TEST_CHROMIUM_UNAVAILABLE;
  if (reason) return `no Chromium at ${CHROMIUM}: ${reason}`;
  if (env.CI && env.CI !== 'false') {
    throw new Error(`no Chromium at ${CHROMIUM} under CI: .ci/run installs it (apt-get install -y chromium), or sets MESH_TEST_CHROMIUM_UNAVAILABLE when it cannot`);
  }
  return `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or MESH_TEST_CHROMIUM=<path>)`;
}

export interface TestBrowser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<TestBrowser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error(`no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);
  const { chromium } = await import('playwright-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 30_000,
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
