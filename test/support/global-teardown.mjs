export { teardown as default } from './global-cluster.mjs';
