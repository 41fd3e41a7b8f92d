/** The HTTP messaging provider against the fake provider: a real HTTP server on loopback. */
import { HttpMessagingProvider } from '../../../../examples/reference/domain/messaging-provider';
import { ProviderUnavailableError } from '../../../../lib/adapters/http/provider-client';
import { classifyError } from '../../../../lib/core/errors';
import { startFakeProvider, type FakeProvider } from '../../../../lib/local/fake-provider';

const MESSAGE = {
  to: 'ayu@example.com',
  template: 'order-paid',
  orderId: 'order-1',
  orderVersion: 2,
} as const;
const OPTS = { idempotencyKey: 'notification:order-1:order-paid', correlationId: 'corr-1' };

let provider: FakeProvider;

beforeEach(async () => {
  provider = await startFakeProvider({ kind: 'messages', random: () => 0.5 });
});

afterEach(async () => {
  await provider.close();
});

describe('Class: HttpMessagingProvider', () => {
  describe('Method: send', () => {
    it('when the provider accepts, it posts the message with the idempotency key and returns the message id', async () => {
      // Prepare
      const client = new HttpMessagingProvider({ baseUrl: `${provider.url}/`, timeoutMs: 2_000 });

      // Act
      const { messageId } = await client.send(MESSAGE, OPTS);

      // Assess
      expect(provider.ledger()).toEqual([
        {
          id: messageId,
          idempotencyKey: OPTS.idempotencyKey,
          body: MESSAGE,
          at: expect.any(String) as unknown,
        },
      ]);
    });

    it('when the same key is sent twice, the provider sends once and both calls get the same message id', async () => {
      // Prepare
      const client = new HttpMessagingProvider({ baseUrl: provider.url, timeoutMs: 2_000 });

      // Act
      const first = await client.send(MESSAGE, OPTS);
      const second = await client.send(MESSAGE, OPTS);

      // Assess
      expect(second.messageId).toBe(first.messageId);
      expect(provider.ledger()).toHaveLength(1);
      expect(provider.requestCount()).toBe(2);
    });

    it('when the provider is down, it throws a transient ProviderUnavailableError', async () => {
      // Prepare
      provider.set({ outage: true });
      const client = new HttpMessagingProvider({ baseUrl: provider.url, timeoutMs: 2_000 });

      // Act
      const error = await client.send(MESSAGE, OPTS).catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(ProviderUnavailableError);
      expect(classifyError(error)).toBe('transient');
    });

    it('when the provider answers later than the timeout, it gives up with a transient error (D4)', async () => {
      // Prepare
      provider.set({ latencyMs: 500 });
      const client = new HttpMessagingProvider({ baseUrl: provider.url, timeoutMs: 50 });

      // Act
      const error = await client.send(MESSAGE, OPTS).catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(ProviderUnavailableError);
      expect((error as Error).message).toContain('no answer within 50 ms');
    });
  });
});
