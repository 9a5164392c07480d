/**
 * A pod the injector cannot render: the field of the pod that is wrong (`path`, e.g.
 * `metadata.annotations["sidecar.mesh.io/proxyCPU"]`) and why. The webhook refuses such a pod with
 * this message; meshctl cluster-inject prints it and exits non-zero.
 */
export class InjectionError extends Error {
  override readonly name = 'InjectionError';
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
  }
}
