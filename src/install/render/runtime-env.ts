/**
 * Process environment the daemon is deployed with (the meshd Deployment the installer renders, and
 * the benchmarks that stand for it). Not configuration of the daemon itself: glibc's allocator reads
 * these at process start, so they must be in the environment before `node` runs.
 *
 * Why: a push writes large frames (0.5–2 MB per LDS/RDS response) that gRPC copies; glibc serves
 * such blocks from its main arena, which fragments under thousands of them and never returns the
 * memory, so the resident size stays at the connect storm's peak. With blocks of 1 MiB and more
 * (the large frames) mapped on their own, freeing one gives it back to the system. A lower
 * threshold (128 KiB) saved a little more memory but cost the connect storm ~45 % more CPU in
 * page faults. docs/adr/0021 has the figures.
 *
 * Since responses are written without a copy per stream (ADR 0022), the blocks of 128 KiB to 1 MiB
 * are mostly the clients' requests (a sidecar's EDS request and each ACK list every cluster,
 * ~165 KB at 1,000 services), 2,000 of them at once in a connect storm: mapped on their own, they go
 * back to the system when freed instead of growing the main arena for good. And V8's young
 * generation is held to 16 MiB semi-spaces (Node 24 grows them to 64 MiB, committing ~130 MB the
 * daemon's heap does not use). docs/adr/0191 has the figures.
 */
export const DAEMON_RUNTIME_ENV: Readonly<Record<string, string>> = Object.freeze({
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_ARENA_MAX: '2',
  NODE_OPTIONS: '--max-semi-space-size=16',
});
