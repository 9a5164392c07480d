/**
 * Helpers every status-writing controller shares: the timestamp format of metav1.Time, and the
 * rule that a condition keeps its lastTransitionTime while its status does not change (so writing
 * the same status again changes nothing on the server).
 */

/** RFC 3339 with second precision, as metav1.Time serializes. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}

/** The lastTransitionTime of a condition now `status`: the previous one while the status is unchanged, else `now`. */
export function transitionTime(previous: { readonly status?: string; readonly lastTransitionTime?: unknown } | undefined, status: string, now: Date): string {
  return previous && previous.status === status && typeof previous.lastTransitionTime === 'string' && previous.lastTransitionTime ? previous.lastTransitionTime : rfc3339(now);
}
