#!/usr/bin/env node
// Generates TypeScript protocol types with ts-proto.
//  - Envoy v3 / xds / udpa / validate / googleapis protos from the @grpc/grpc-js-xds package (deps/),
//    well-known types from the `protoc` package's include/ folder.
//  - The project's own protos under proto/.
// Output goes to src/gen/ (git-ignored, never edited by hand). Only the root files listed below and
// what they import are generated.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, readdirSync, statSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const xdsDeps = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
const protocPkg = dirname(require.resolve('protoc/package.json'));
const protocBin = join(protocPkg, 'bin', `protoc-linux-${process.arch === 'arm64' ? 'aarch_64' : 'x86_64'}`);
const plugin = join(root, 'node_modules', '.bin', 'protoc-gen-ts_proto');
const out = join(root, 'src', 'gen');

// The validate.proto bundled with @grpc/grpc-js-xds predates its Envoy protos (StringRules.ignore_empty
// is missing). A patched copy is derived at generation time, outside the repo, and searched first.
const patchedDir = join(root, 'node_modules', '.cache', 'mesh-proto');
{
  const src = readFileSync(join(xdsDeps, 'protoc-gen-validate', 'validate', 'validate.proto'), 'utf8');
  const patched = src.includes('ignore_empty')
    ? src
    : src.replace(/message StringRules \{/, 'message StringRules {\n    optional bool ignore_empty = 26;');
  mkdirSync(join(patchedDir, 'validate'), { recursive: true });
  writeFileSync(join(patchedDir, 'validate', 'validate.proto'), patched);
}

const includes = [
  patchedDir,
  join(protocPkg, 'include'),
  join(xdsDeps, 'envoy-api'),
  join(xdsDeps, 'xds'),
  join(xdsDeps, 'protoc-gen-validate'),
  join(xdsDeps, 'googleapis'),
  join(root, 'proto'),
];

// The Envoy API surface the generators emit.
const envoyRoots = [
  'envoy/service/discovery/v3/ads.proto',
  'envoy/service/discovery/v3/discovery.proto',
  'envoy/config/cluster/v3/cluster.proto',
  'envoy/config/endpoint/v3/endpoint.proto',
  'envoy/config/listener/v3/listener.proto',
  'envoy/config/route/v3/route.proto',
  'envoy/config/core/v3/base.proto',
  'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
  'envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.proto',
  'envoy/extensions/filters/http/router/v3/router.proto',
  'envoy/extensions/access_loggers/file/v3/file.proto',
  'envoy/extensions/filters/http/fault/v3/fault.proto',
  'envoy/extensions/filters/http/cors/v3/cors.proto',
  'envoy/extensions/filters/listener/original_dst/v3/original_dst.proto',
  'envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto',
  'envoy/extensions/filters/listener/http_inspector/v3/http_inspector.proto',
  'envoy/extensions/transport_sockets/tls/v3/tls.proto',
  'envoy/extensions/transport_sockets/tls/v3/common.proto',
  'envoy/extensions/upstreams/http/v3/http_protocol_options.proto',
  'envoy/admin/v3/config_dump.proto',
  'envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer.proto',
  // security policy (docs/adr/0081): authorization filters
  'envoy/extensions/filters/http/rbac/v3/rbac.proto',
  'envoy/extensions/filters/network/rbac/v3/rbac.proto',
  // the sidecar agent (src/agent/): its SDS server and the Envoy bootstrap it writes
  'envoy/service/secret/v3/sds.proto',
  'envoy/config/bootstrap/v3/bootstrap.proto',
  // request authentication and external authorization (docs/adr/0100, 0101)
  'envoy/extensions/filters/http/jwt_authn/v3/config.proto',
  'envoy/extensions/filters/http/ext_authz/v3/ext_authz.proto',
  'envoy/extensions/filters/network/ext_authz/v3/ext_authz.proto',
];

function listProtos(dir) {
  if (!existsSync(dir)) return [];
  const outList = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) outList.push(...listProtos(p));
    else if (name.endsWith('.proto')) outList.push(relative(join(root, 'proto'), p));
  }
  return outList.sort();
}

const ownRoots = listProtos(join(root, 'proto'));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const opts = [
  'esModuleInterop=true',
  'importSuffix=.js',
  'outputServices=false',
  'forceLong=number',
  'useDate=false',
  'env=node',
  'oneof=properties',
  'useOptionals=messages',
  'outputPartialMethods=true',
  'outputJsonMethods=true',
  'snakeToCamel=true',
  'unrecognizedEnum=false',
].join(',');

const started = Date.now();
execFileSync(
  protocBin,
  [
    `--plugin=protoc-gen-ts_proto=${plugin}`,
    `--ts_proto_out=${out}`,
    `--ts_proto_opt=${opts}`,
    ...includes.map((i) => `-I${i}`),
    ...envoyRoots,
    ...ownRoots,
  ],
  { stdio: 'inherit' },
);
// A descriptor set of the project's own protos feeds the config-schema generator (zod + CRD schemas).
if (ownRoots.length > 0) {
  execFileSync(
    protocBin,
    [
      '--include_imports',
      '--include_source_info',
      `--descriptor_set_out=${join(out, 'mesh-descriptor.pb')}`,
      ...includes.map((i) => `-I${i}`),
      ...ownRoots,
    ],
    { stdio: 'inherit' },
  );
}
console.log(`gen-proto: ${envoyRoots.length} Envoy roots, ${ownRoots.length} own protos -> src/gen in ${Date.now() - started} ms`);
