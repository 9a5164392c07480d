/**
 * Label keys and values the installer puts on what it renders (docs/adr/0012-install-api-and-rendering.md).
 * Every rendered object carries the four ownership labels, so that an installation's objects can be
 * listed, compared and pruned by component and revision.
 */

/** Name of the MeshOperator that owns the object; `installed-state` (or `installed-state-<rev>`) for meshctl. */
export const OWNING_RESOURCE_LABEL = 'install.mesh.io/owning-resource';
/** Namespace of that MeshOperator (the control-plane namespace for meshctl). */
export const OWNING_RESOURCE_NAMESPACE_LABEL = 'install.mesh.io/owning-resource-namespace';
/** Component that rendered the object: Base, Meshd, IngressGateways or EgressGateways. */
export const COMPONENT_LABEL = 'operator.mesh.io/component';
/** Control-plane revision (CONVENTIONS.md); `default` for the default revision. */
export const REVISION_LABEL = 'mesh.io/rev';
export const DEFAULT_REVISION_LABEL_VALUE = 'default';

/** Name of the owner when meshctl installs without an operator resource. */
export const CLI_OWNER_NAME = 'installed-state';

/** Other names from CONVENTIONS.md that rendering uses. */
export const INJECTION_NAMESPACE_LABEL = 'mesh-injection';
export const INJECT_POD_LABEL = 'sidecar.mesh.io/inject';
export { LABEL_NETWORK as NETWORK_LABEL } from '../model/labels.js';
/** Pod label selected by Gateway resources (`selector: {mesh: ingressgateway}`). */
export const GATEWAY_SELECTOR_LABEL = 'mesh';
