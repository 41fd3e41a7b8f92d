import http from 'node:http';
import https from 'node:https';
import Redis from 'ioredis';

/** What an HTTP probe found at a URL. */
export type HttpProbe =
  /** Nothing listens there: the port is free. */
  | { readonly kind: 'refused' }
  /** Something listens but gave no HTTP answer in time (or not HTTP at all). */
  | { readonly kind: 'no-answer'; readonly reason: string }
  /** An HTTP server answered. */
  | {
      readonly kind: 'answered';
      readonly status: number;
      readonly body: string;
      /** Response headers, names in lower case. */
      readonly headers: Readonly<Record<string, string | string[] | undefined>>;
    };

/** Sends one GET to `url` on a fresh connection and reports what answered, within `timeoutMs`. */
export function probeHttp(url: string, timeoutMs: number): Promise<HttpProbe> {
  const client = new URL(url).protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    // agent: false so that no keep-alive socket outlives the probe.
    const request = client.get(url, { agent: false, timeout: timeoutMs }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          kind: 'answered',
          status: response.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
          headers: response.headers,
        }),
      );
      response.on('error', (error) => resolve({ kind: 'no-answer', reason: error.message }));
    });
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', (error: NodeJS.ErrnoException) =>
      resolve(
        error.code === 'ECONNREFUSED' ? { kind: 'refused' } : { kind: 'no-answer', reason: error.message },
      ),
    );
  });
}

/** Path of moto's dashboard: cheap to serve whatever the emulator holds (unlike `/moto-api/data.json`). */
export const MOTO_PROBE_PATH = '/moto-api/';

/** True when the probe of {@link MOTO_PROBE_PATH} was answered by moto's dashboard. */
export function isMoto(probe: HttpProbe): boolean {
  return probe.kind === 'answered' && probe.status === 200 && /<title>\s*Moto\s*<\/title>/i.test(probe.body);
}

/** Header that lib/local/moto_server.py adds to every response (moto with DynamoDB served one request at a time). */
export const SERIALIZED_MOTO_HEADER = 'x-tenang-moto';

/** True when the moto that answered the probe is tenang's launcher (lib/local/moto_server.py), not a stock moto. */
export function isSerializedMoto(probe: HttpProbe): boolean {
  return (
    isMoto(probe) &&
    probe.kind === 'answered' &&
    probe.headers[SERIALIZED_MOTO_HEADER] === 'serialized-dynamodb'
  );
}

/** True when the Redis server at `url` answers PING within `timeoutMs`. */
export async function pingRedis(url: string, timeoutMs: number): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    enableOfflineQueue: false,
    enableReadyCheck: false,
    disableClientInfo: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // Connection failures are this probe's expected "no" answer; they surface through connect()/ping().
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false; // not (yet) a Redis that answers: the caller polls or reports
  } finally {
    // After a refused connection the client is already 'end'; disconnect() then would leave
    // ioredis's 2 s disconnect timer holding the event loop.
    if (client.status !== 'end') client.disconnect();
  }
}
