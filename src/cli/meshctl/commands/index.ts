/**
 * The commands of `meshctl`, one module each. A module exports `register(program, cli)`, which
 * only declares the command (arguments, flags, help) and imports anything heavy inside its action,
 * so that start-up stays fast. New commands are added to this list.
 */
import type { RegisterCommand } from './types.js';
import { register as admin } from './admin.js';
import { register as analyze } from './analyze.js';
import { register as authz } from './authz.js';
import { register as bugReport } from './bug-report.js';
import { register as clusterInject } from './cluster-inject.js';
import { register as completion } from './completion.js';
import { register as dashboard } from './dashboard.js';
import { register as experimental } from './experimental.js';
import { register as install } from './install.js';
import { register as manifest } from './manifest.js';
import { register as operator } from './operator.js';
import { register as options } from './options.js';
import { register as profile } from './profile.js';
import { register as proxyConfig } from './proxy-config.js';
import { register as proxyStatus } from './proxy-status.js';
import { register as tag } from './tag.js';
import { register as upgrade } from './upgrade.js';
import { register as validate } from './validate.js';
import { register as verifyInstall } from './verify-install.js';
import { register as version } from './version.js';

export type { RegisterCommand };

export const COMMANDS: readonly RegisterCommand[] = [admin, analyze, authz, bugReport, clusterInject, completion, dashboard, experimental, install, manifest, operator, options, profile, proxyConfig, proxyStatus, tag, upgrade, validate, verifyInstall, version];
