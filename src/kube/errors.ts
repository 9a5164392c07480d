/**
 * Typed errors of the Kubernetes client: an API error carries the HTTP status code and the
 * `reason`/`message` of the API server's Status object, so callers branch on `isNotFound(err)`
 * and friends instead of parsing messages.
 */

/** One entry of a Status object's `details.causes` (e.g. the field a validation refused). */
export interface StatusCause {
  readonly reason?: string;
  readonly message?: string;
  readonly field?: string;
}

/** The parts of a `metav1.Status` the client reads. */
export interface KubeStatus {
  readonly kind?: string;
  readonly status?: string;
  readonly message?: string;
  readonly reason?: string;
  readonly code?: number;
  readonly details?: {
    readonly name?: string;
    readonly group?: string;
    readonly kind?: string;
    readonly causes?: ReadonlyArray<StatusCause>;
    readonly retryAfterSeconds?: number;
  };
}

/**
 * The API server could not be reached: the connection was refused, the host is unknown, the TLS
 * handshake failed, no answer came in time, or the connection broke before the answer. `server` is
 * the API server's origin; `code` the system error code when there is one (ECONNREFUSED, …).
 */
export class KubeUnreachableError extends Error {
  readonly server: string;
  readonly code: string | undefined;

  constructor(server: string, message: string, code: string | undefined, cause: unknown) {
    super(message, { cause });
    this.name = 'KubeUnreachableError';
    this.server = server;
    this.code = code;
  }
}

/** Reasons the API server puts in a Status when the body has none, by HTTP status code. */
const REASON_BY_CODE: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export function isStatus(value: unknown): value is KubeStatus {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'Status';
}

/** An answer of the API server with a non-success status code (or an ERROR watch event). */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  /** HTTP status code (410 for an expired resource version, also when it came as a watch event). */
  readonly statusCode: number;
  /** Machine-readable reason: NotFound, Conflict, AlreadyExists, Invalid, Gone, Expired, ... */
  readonly reason: string;
  /** The API server's message, or the HTTP status text. */
  readonly apiMessage: string;
  readonly causes: ReadonlyArray<StatusCause>;
  readonly method: string;
  readonly path: string;
  readonly retryAfterSeconds?: number;

  constructor(init: {
    statusCode: number;
    reason?: string;
    message?: string;
    causes?: ReadonlyArray<StatusCause>;
    method: string;
    path: string;
    retryAfterSeconds?: number;
  }) {
    const reason = init.reason || REASON_BY_CODE[init.statusCode] || 'Unknown';
    const apiMessage = init.message || reason;
    super(`${init.method} ${init.path}: ${init.statusCode} ${reason}: ${apiMessage}`);
    this.statusCode = init.statusCode;
    this.reason = reason;
    this.apiMessage = apiMessage;
    this.causes = init.causes ?? [];
    this.method = init.method;
    this.path = init.path;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }

  /** Builds the error from a response body (a Status object when the server sent one). */
  static fromResponse(method: string, path: string, statusCode: number, body: unknown): KubeApiError {
    if (isStatus(body)) {
      return new KubeApiError({
        statusCode: body.code || statusCode,
        reason: body.reason,
        message: body.message,
        causes: body.details?.causes,
        method,
        path,
        retryAfterSeconds: body.details?.retryAfterSeconds,
      });
    }
    const text = typeof body === 'string' ? body.trim().slice(0, 500) : undefined;
    return new KubeApiError({ statusCode, message: text || undefined, method, path });
  }
}

function statusOf(err: unknown): number | undefined {
  return err instanceof KubeApiError ? err.statusCode : undefined;
}

export function isNotFound(err: unknown): boolean {
  return statusOf(err) === 404;
}

export function isConflict(err: unknown): boolean {
  return statusOf(err) === 409 && (err as KubeApiError).reason !== 'AlreadyExists';
}

export function isAlreadyExists(err: unknown): boolean {
  return statusOf(err) === 409 && (err as KubeApiError).reason === 'AlreadyExists';
}

/** 410: the requested resource version is older than what the server keeps (list again). */
export function isGone(err: unknown): boolean {
  return statusOf(err) === 410;
}

export function isTooManyRequests(err: unknown): boolean {
  return statusOf(err) === 429;
}

/** The request was aborted through its AbortSignal. */
export function isAbortError(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || (err as NodeJS.ErrnoException).code === 'ABORT_ERR');
}
