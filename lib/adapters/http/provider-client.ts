/**
 * JSON-over-HTTP calls to an external provider (payment, messaging). Every call carries the
 * job's idempotency key (I3) and an explicit timeout shorter than the function's (D4); failures
 * become domain errors: 408/429/5xx, timeouts and network errors are transient, other 4xx
 * permanent.
 */
import { classifyHttpStatus, PermanentError, TransientError } from '../../core/errors';

/** The provider answered 408, 429 or 5xx, timed out, or could not be reached. */
export class ProviderUnavailableError extends TransientError {}

/** The provider refused the request (4xx): retrying cannot help. */
export class ProviderRejectedError extends PermanentError {}

/** Options of one call. */
export interface ProviderCallOptions {
  readonly idempotencyKey: string;
  readonly timeoutMs: number;
  readonly correlationId?: string;
}

/**
 * The correlation id as a header value. The envelope's correlation id is free text, but fetch
 * refuses a header with a control character or anything beyond Latin-1 (a TypeError that would
 * read as an unreachable provider and be retried until the DLQ). Visible ASCII, the usual id, is
 * sent as is; every other byte of its UTF-8 (and `%`) is percent-encoded.
 */
function correlationHeader(correlationId: string): string {
  // Byte by byte: Buffer turns a lone surrogate into U+FFFD, where encodeURIComponent would throw.
  return [...Buffer.from(correlationId, 'utf8')]
    .map((byte) =>
      byte > 0x20 && byte < 0x7f && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

/** POSTs `body` as JSON and returns the parsed JSON answer. */
export async function postJson<T>(url: string, body: unknown, opts: ProviderCallOptions): Promise<T> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': opts.idempotencyKey,
        ...(opts.correlationId === undefined
          ? {}
          : { 'x-correlation-id': correlationHeader(opts.correlationId) }),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    // The body arrives after the headers: a dropped connection or the timeout can strike here too.
    text = await response.text();
  } catch (cause) {
    // Read the name without `instanceof Error`: fetch's errors come from Node's own realm, which
    // is not the caller's under Jest (the timeout would read as a bare "Error").
    const name = String((cause as { name?: unknown } | null)?.name ?? 'Error');
    throw new ProviderUnavailableError(
      `${url}: ${name === 'TimeoutError' ? `no answer within ${opts.timeoutMs} ms` : name}`,
      {
        cause,
      },
    );
  }
  if (!response.ok) {
    const detail = `${url}: HTTP ${response.status} ${text.slice(0, 200)}`;
    if (classifyHttpStatus(response.status) === 'transient') throw new ProviderUnavailableError(detail);
    throw new ProviderRejectedError(detail);
  }
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new ProviderUnavailableError(`${url}: answer is not JSON`, { cause });
  }
}
