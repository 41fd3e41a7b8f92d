/**
 * A client of the local HTTP API, as scenario flows and drills call it: one request, its answer
 * parsed as JSON when it is JSON, a network failure answered as status 0 rather than thrown (a
 * flow's traffic retries it like any other failure).
 */

/** An answer of the API. */
export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Headers | undefined;
}

/** Calls the API; a network failure is status 0. */
export async function callApi(
  apiUrl: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiAnswer> {
  try {
    const response = await fetch(`${apiUrl}${path}`, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON: kept as text.
    }
    return { status: response.status, body: parsed, headers: response.headers };
  } catch (error) {
    return { status: 0, body: String(error), headers: undefined };
  }
}
