/**
 * The scenario's traffic generator against a stand-in API on loopback: which payments it gives
 * up on, and which of those it cannot know the outcome of (the charge invariant allows each of
 * those one charge).
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { TrafficGenerator } from '../../../../examples/reference/local/traffic';

/** An API answering every payment with `status`. */
async function apiAnswering(status: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `answered ${status}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function generator(apiUrl: string): TrafficGenerator {
  return new TrafficGenerator({
    apiUrl,
    runId: 'r1',
    skus: ['sku-1'],
    ratePerSecond: 1,
    maxAttempts: 2,
    retryDelayMs: 1,
    elapsedMs: () => 0,
    log: () => undefined,
  });
}

const ORDER = {
  orderId: 'o1',
  body: { lines: [{ sku: 'sku-1', quantity: 1 }], amountMinor: 100, currency: 'EUR' },
} as unknown as Parameters<TrafficGenerator['capture']>[0];

describe('Class: TrafficGenerator', () => {
  it.each([
    [503, ['p1']],
    [500, ['p1']],
    [400, []],
    [404, []],
  ])(
    'when every answer to a payment is %i, it gives the payment up and counts it unsettled only when the answer left the outcome open',
    async (status, unsettled) => {
      // Prepare
      const api = await apiAnswering(status);
      try {
        const traffic = generator(api.url);

        // Act
        const result = await traffic.capture(ORDER, 'p1', 'k1');

        // Assess
        expect(result.accepted).toBe(false);
        expect(traffic.stats.paymentsAbandoned).toBe(1);
        expect(traffic.unsettled()).toEqual(unsettled);
        expect(traffic.accepted()).toEqual([]);
      } finally {
        await api.close();
      }
    },
  );
});
