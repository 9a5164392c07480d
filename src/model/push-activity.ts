/**
 * Whether configuration is being pushed right now: from the moment a push request leaves the
 * model until the transport has delivered it to every connection. Work that can wait (the
 * certificate service's queue, docs/adr/0140) reads it to step aside while a push runs, so that a
 * burst of such work does not delay the push's delivery.
 *
 * The wiring (src/bootstrap) opens a span per push and closes it when the transport is idle; this
 * class only counts spans and tells listeners when the last one closes.
 */
export class PushActivity {
  private open = 0;
  private readonly idleListeners = new Set<() => void>();

  /** True while at least one push is in flight. */
  get busy(): boolean {
    return this.open > 0;
  }

  /** Opens a span; call the returned function once when the push is delivered (extra calls are ignored). */
  begin(): () => void {
    this.open++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.open--;
      if (this.open === 0) for (const l of [...this.idleListeners]) l();
    };
  }

  /** Told each time the last open span closes; returns the unsubscribe function. */
  onIdle(listener: () => void): () => void {
    this.idleListeners.add(listener);
    return () => this.idleListeners.delete(listener);
  }
}
