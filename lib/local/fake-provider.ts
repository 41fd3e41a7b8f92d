/**
 * Fake external providers (payment, messaging) as real HTTP servers on 127.0.0.1. They honor
 * Idempotency-Key like Stripe does (a repeated key returns the first answer and makes no new
 * side effect), keep a ledger of side effects for tests to assert on, and have knobs for
 * latency, error rate and outage.
 */
import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Fault knobs. */
export interface ProviderKnobs {
  /** Added to every answer, ms. @default 0 */
  latencyMs: number;
  /** Share of requests answered 500 before any side effect, 0–1. @default 0 */
  errorRate: number;
  /** Share of requests answered 500 AFTER the side effect (the client sees a failure). @default 0 */
  errorAfterEffectRate: number;
  /** Every request answered 503. @default false */
  outage: boolean;
  /** Idempotency-Keys answered 500 before any side effect: one failing order among healthy ones. @default [] */
  failingKeys: readonly string[];
}

/** One side effect. */
export interface LedgerEntry {
  readonly id: string;
  readonly idempotencyKey: string;
  readonly body: unknown;
  readonly at: string;
}

/** A running fake provider. */
export interface FakeProvider {
  /** Base URL, e.g. http://127.0.0.1:41234. */
  readonly url: string;
  /** Side effects, in order. */
  ledger(): readonly LedgerEntry[];
  /** Requests received (including replays and failures). */
  requestCount(): number;
  /** Changes knobs. */
  set(knobs: Partial<ProviderKnobs>): void;
  close(): Promise<void>;
}

/** Options of startFakeProvider. */
export interface FakeProviderOptions {
  /**
   * What the provider does: `charges` or `messages` (the path it serves: POST /<kind>), or
   * `records` for a provider an app declares that the platform knows nothing else about (POST to
   * any path, each idempotency key's effect recorded once).
   */
  readonly kind: 'charges' | 'messages' | 'records';
  /** @default 0 (any free port) */
  readonly port?: number;
  /** @default Math.random */
  readonly random?: () => number;
  readonly knobs?: Partial<ProviderKnobs>;
}

const DEFAULT_KNOBS: ProviderKnobs = {
  latencyMs: 0,
  errorRate: 0,
  errorAfterEffectRate: 0,
  outage: false,
  failingKeys: [],
};

/** The prefix of the ids each kind of provider hands out. */
const ID_PREFIX = { charges: 'ch', messages: 'msg', records: 'rec' } as const;

/** Starts a fake provider. Admin: GET /__ledger, POST /__knobs (JSON knobs). */
export async function startFakeProvider(opts: FakeProviderOptions): Promise<FakeProvider> {
  const random = opts.random ?? Math.random;
  let knobs: ProviderKnobs = { ...DEFAULT_KNOBS, ...opts.knobs };
  const ledger: LedgerEntry[] = [];
  const answers = new Map<string, Promise<{ status: number; body: unknown }>>();
  let requests = 0;

  const send = (res: http.ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const readBody = (req: http.IncomingMessage): Promise<string> =>
    new Promise((resolve, reject) => {
      let data = '';
      req.on('data', (chunk: Buffer) => (data += chunk.toString()));
      req.on('end', () => resolve(data));
      req.on('error', reject);
    });
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

  const server = http.createServer((req, res) => {
    void (async (): Promise<void> => {
      const raw = await readBody(req);
      if (req.method === 'GET' && req.url === '/__ledger') return send(res, 200, ledger);
      if (req.method === 'POST' && req.url === '/__knobs') {
        knobs = { ...knobs, ...(JSON.parse(raw) as Partial<ProviderKnobs>) };
        return send(res, 200, knobs);
      }
      if (req.method !== 'POST' || (opts.kind !== 'records' && req.url !== `/${opts.kind}`))
        return send(res, 404, { error: 'not found' });
      requests += 1;
      if (knobs.latencyMs > 0) await sleep(knobs.latencyMs);
      if (knobs.outage) return send(res, 503, { error: 'provider outage' });
      const key = req.headers['idempotency-key'];
      if (typeof key !== 'string' || key.length === 0) {
        return send(res, 400, { error: 'Idempotency-Key header is required' });
      }
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        return send(res, 400, { error: 'body is not JSON' });
      }
      if (random() < knobs.errorRate || knobs.failingKeys.includes(key)) {
        return send(res, 500, { error: 'injected provider error' });
      }
      const previous = answers.get(key);
      if (previous !== undefined) {
        const answer = await previous;
        return send(res, answer.status, { ...(answer.body as object), replayed: true });
      }
      const answer = Promise.resolve({
        status: 200,
        body: { id: `${ID_PREFIX[opts.kind]}_${randomUUID()}`, idempotencyKey: key },
      });
      answers.set(key, answer);
      const { body: first } = await answer;
      ledger.push({
        id: (first as { id: string }).id,
        idempotencyKey: key,
        body,
        at: new Date().toISOString(),
      });
      if (random() < knobs.errorAfterEffectRate)
        return send(res, 500, { error: 'injected error after the effect' });
      return send(res, 200, first);
    })().catch((error: unknown) => send(res, 500, { error: String(error) }));
  });

  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    ledger: () => [...ledger],
    requestCount: () => requests,
    set: (k) => {
      knobs = { ...knobs, ...k };
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
