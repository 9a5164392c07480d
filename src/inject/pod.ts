/** The Kubernetes shapes the injector works on (the client library's types, read as plain JSON). */
import type { V1Container, V1EnvVar, V1ObjectMeta, V1Pod, V1PodSpec, V1Probe, V1Volume, V1VolumeMount } from '@kubernetes/client-node';

export type Pod = V1Pod;
export type PodSpec = V1PodSpec;
export type Container = V1Container;
export type EnvVar = V1EnvVar;
export type Volume = V1Volume;
export type VolumeMount = V1VolumeMount;
export type Probe = V1Probe;
export type ObjectMeta = V1ObjectMeta;
