import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { classifyError } from '../../../lib/core/errors';
import {
  ProviderRejectedError,
  ProviderUnavailableError,
  postJson,
} from '../../../lib/adapters/http/provider-client';
import { startFakeProvider, type FakeProvider } from '../../../lib/local/fake-provider';

/** The provider's answer to a charge. */
interface Charge {
  readonly id: string;
  readonly idempotencyKey: string;
  readonly replayed?: boolean;
}

const CHARGE = { orderId: 'ord-1', amountMinor: 1999, currency: 'EUR' };
const TIMEOUT_MS = 2_000;

/**
 * A provider that answers 200 and starts the body, then either drops the connection or never
 * finishes: faults the fake provider has no knob for.
 */
async function startHalfAnswering(
  fault: 'drop' | 'stall',
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '64' });
    res.write('{"id":');
    if (fault === 'drop') setImmediate(() => res.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/charges`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/** Runs `action` and returns what it rejected with; fails the test if it resolved. */
async function rejectionOf(action: () => Promise<unknown>): Promise<Error> {
  try {
    await action();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection, but the call succeeded');
}

let provider: FakeProvider;
let url: string;

beforeEach(async () => {
  provider = await startFakeProvider({ kind: 'charges', random: () => 0.5 });
  url = `${provider.url}/charges`;
});

afterEach(async () => {
  await provider.close();
});

describe('Function: postJson', () => {
  it('when the call succeeds, it sends the idempotency key and returns the parsed answer', async () => {
    // Act
    const charge = await postJson<Charge>(url, CHARGE, {
      idempotencyKey: 'payment:pay_1:capture',
      timeoutMs: TIMEOUT_MS,
      correlationId: 'corr-1',
    });

    // Assess
    expect(charge).toEqual({ id: expect.stringMatching(/^ch_/), idempotencyKey: 'payment:pay_1:capture' });
    expect(provider.ledger()).toEqual([
      { id: charge.id, idempotencyKey: 'payment:pay_1:capture', body: CHARGE, at: expect.any(String) },
    ]);
  });

  it('when the same key is sent twice, the replay returns the same id and makes no second effect', async () => {
    // Prepare
    const opts = { idempotencyKey: 'payment:pay_1:capture', timeoutMs: TIMEOUT_MS };
    const first = await postJson<Charge>(url, CHARGE, opts);

    // Act
    const replay = await postJson<Charge>(url, CHARGE, opts);

    // Assess
    expect(replay.id).toBe(first.id);
    expect(replay.replayed).toBe(true);
    expect(provider.ledger()).toHaveLength(1);
    expect(provider.requestCount()).toBe(2);
  });

  it('when two keys are sent, each makes its own effect', async () => {
    // Act
    const a = await postJson<Charge>(url, CHARGE, { idempotencyKey: 'k-a', timeoutMs: TIMEOUT_MS });
    const b = await postJson<Charge>(url, CHARGE, { idempotencyKey: 'k-b', timeoutMs: TIMEOUT_MS });

    // Assess
    expect(a.id).not.toBe(b.id);
    expect(provider.ledger().map((e) => e.idempotencyKey)).toEqual(['k-a', 'k-b']);
  });

  it('when the provider answers 500 before the effect, it throws a transient ProviderUnavailableError', async () => {
    // Prepare
    provider.set({ errorRate: 1 });

    // Act
    const error = await rejectionOf(() =>
      postJson(url, CHARGE, { idempotencyKey: 'k-1', timeoutMs: TIMEOUT_MS }),
    );

    // Assess
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect(error.name).toBe('ProviderUnavailableError');
    expect(error.message).toContain('HTTP 500');
    expect(classifyError(error)).toBe('transient');
    expect(provider.ledger()).toEqual([]);
  });

  it('when the idempotency key is empty, the provider answers 400 and it throws a permanent ProviderRejectedError', async () => {
    // Act
    const error = await rejectionOf(() =>
      postJson(url, CHARGE, { idempotencyKey: '', timeoutMs: TIMEOUT_MS }),
    );

    // Assess
    expect(error).toBeInstanceOf(ProviderRejectedError);
    expect(error.message).toContain('HTTP 400');
    expect(error.message).toContain('Idempotency-Key header is required');
    expect(classifyError(error)).toBe('permanent');
    expect(provider.ledger()).toEqual([]);
  });

  it('when a request carries no Idempotency-Key header at all, the fake provider refuses it with 400', async () => {
    // Act
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(CHARGE),
    });

    // Assess
    expect(response.status).toBe(400);
    expect(provider.ledger()).toEqual([]);
  });

  it('when the provider has an outage (503), it throws a transient ProviderUnavailableError', async () => {
    // Prepare
    provider.set({ outage: true });

    // Act
    const error = await rejectionOf(() =>
      postJson(url, CHARGE, { idempotencyKey: 'k-1', timeoutMs: TIMEOUT_MS }),
    );

    // Assess
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect(error.message).toContain('HTTP 503');
    expect(classifyError(error)).toBe('transient');
  });

  it('when the provider answers later than the timeout, it throws a transient error that says it timed out', async () => {
    // Prepare
    provider.set({ latencyMs: 400 });

    // Act
    const error = await rejectionOf(() => postJson(url, CHARGE, { idempotencyKey: 'k-1', timeoutMs: 50 }));

    // Assess
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect(classifyError(error)).toBe('transient');
    expect((error.cause as Error).name).toBe('TimeoutError');
    expect(error.message).toBe(`${url}: no answer within 50 ms`);
  });

  it('when nothing listens at the address, it throws a transient ProviderUnavailableError', async () => {
    // Act
    const error = await rejectionOf(() =>
      postJson('http://127.0.0.1:1/charges', CHARGE, { idempotencyKey: 'k-1', timeoutMs: TIMEOUT_MS }),
    );

    // Assess
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect(classifyError(error)).toBe('transient');
  });

  it('when the provider fails after its effect, the client sees transient; the retry with the same key returns the first answer without a second effect', async () => {
    // Prepare
    provider.set({ errorAfterEffectRate: 1 });
    const opts = { idempotencyKey: 'payment:pay_1:capture', timeoutMs: TIMEOUT_MS };

    // Act
    const error = await rejectionOf(() => postJson<Charge>(url, CHARGE, opts));
    const retry = await postJson<Charge>(url, CHARGE, opts);

    // Assess
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect(classifyError(error)).toBe('transient');
    const ledger = provider.ledger();
    expect(ledger).toHaveLength(1);
    expect(retry).toMatchObject({
      id: ledger[0]?.id,
      idempotencyKey: 'payment:pay_1:capture',
      replayed: true,
    });
  });

  it.each([
    { fault: 'drop' as const, says: /: TypeError$/ },
    { fault: 'stall' as const, says: /: no answer within 100 ms$/ },
  ])(
    'when the connection fails while the body arrives ($fault), it throws a transient ProviderUnavailableError',
    async ({ fault, says }) => {
      // Prepare
      const halfAnswering = await startHalfAnswering(fault);

      try {
        // Act
        const error = await rejectionOf(() =>
          postJson(halfAnswering.url, CHARGE, { idempotencyKey: 'k-1', timeoutMs: 100 }),
        );

        // Assess
        expect(error).toBeInstanceOf(ProviderUnavailableError);
        expect(error.message).toMatch(says);
        expect(classifyError(error)).toBe('transient');
      } finally {
        await halfAnswering.close();
      }
    },
  );
});
