/**
 * Preloaded into the measured `meshctl` process (`node --import`): at exit it writes the process's
 * own CPU time to standard error as `bench-cpu-ms <user+system>`, so the benchmark can tell the work
 * done from time spent waiting for a busy machine's cores.
 */
process.on('exit', () => {
  const { user, system } = process.cpuUsage();
  process.stderr.write(`\nbench-cpu-ms ${((user + system) / 1000).toFixed(0)}\n`);
});
