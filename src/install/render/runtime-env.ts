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
 */
export const DAEMON_RUNTIME_ENV: Readonly<Record<string, string>> = Object.freeze({
  MALLOC_MMAP_THRESHOLD_: '1048576',
  MALLOC_ARENA_MAX: '2',
});
