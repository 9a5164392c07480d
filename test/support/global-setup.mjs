export { setup as default } from './global-cluster.mjs';
