// Prints the plain closing line "N passed, N failed" that CI reads, after Jest's own summary.
// Also says at the start which Node runs the tests (the project pins one, docs/adr/0023).
class SummaryReporter {
  onRunStart() {
    process.stdout.write(`tests: running on node ${process.version} (${process.execPath})\n`);
  }

  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(`\ntests: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
