/**
 * Whether configuration is being pushed right now: from the moment a push request leaves the
 * model until the transport has delivered it to every connection. Work that can wait (the
 * certificate service's queue, docs/adr/0140) reads it to step aside while a push runs, so that a
 * burst of such work does not delay the push's delivery.
 *
 * The model opens a span per debouncer from a push's first pending change until its listeners have
 * the push; the wiring (src/bootstrap) hands each push to `delivering`, whose span lasts until the
 * transport is idle. This class counts spans and tells listeners when the last one closes.
 */
export class PushActivity {
  private open = 0;
  private readonly idleListeners = new Set<() => void>();
  /** The span of `delivering`, while one is open. */
  private delivery: (() => void) | undefined;
  /** Pushes handed to `delivering`, to tell whether one came after the transport was last asked. */
  private deliveries = 0;

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

  /**
   * A push was handed to the transport: holds a span until `idle()` (the transport's "every queued
   * push delivered") resolves with no push handed over since it was asked. One span covers every
   * push queued meanwhile, and it is opened even while another span (the model's, which closes
   * as soon as its listeners have the push) is open: the delivery is the part that must not wait.
   */
  delivering(idle: () => Promise<void>): void {
    this.deliveries++;
    if (this.delivery) return;
    this.delivery = this.begin();
    const wait = (): void => {
      const asked = this.deliveries;
      const settle = (): void => {
        if (this.deliveries !== asked) return wait(); // a push came meanwhile: wait for it too
        const end = this.delivery;
        this.delivery = undefined;
        end?.();
      };
      idle().then(settle, settle);
    };
    wait();
  }

  /** Told each time the last open span closes; returns the unsubscribe function. */
  onIdle(listener: () => void): () => void {
    this.idleListeners.add(listener);
    return () => this.idleListeners.delete(listener);
  }
}
