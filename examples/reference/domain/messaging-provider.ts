/** MessagingProvider over the provider's HTTP API: `POST {baseUrl}/messages` with an Idempotency-Key (I3, D4). */
import * as z from 'tenang/zod';
import type { MessagingProvider, OutgoingMessage } from './notification';
import { postJson, ProviderUnavailableError } from 'tenang/runtime';

const MessageAnswer = z.object({ id: z.string().check(z.minLength(1)) });

/** Options of HttpMessagingProvider. */
export interface HttpMessagingProviderOptions {
  /** Base URL, without a trailing path (e.g. https://messaging.example.com). */
  readonly baseUrl: string;
  /** Per-call timeout; keep it well under the function timeout (D4). */
  readonly timeoutMs: number;
}

/** Sends messages through the provider's HTTP API. */
export class HttpMessagingProvider implements MessagingProvider {
  private readonly url: string;

  public constructor(private readonly options: HttpMessagingProviderOptions) {
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/messages`;
  }

  public async send(
    message: OutgoingMessage,
    opts: { idempotencyKey: string; correlationId: string },
  ): Promise<{ messageId: string }> {
    const answer = await postJson<unknown>(this.url, message, {
      idempotencyKey: opts.idempotencyKey,
      correlationId: opts.correlationId,
      timeoutMs: this.options.timeoutMs,
    });
    const parsed = MessageAnswer.safeParse(answer);
    // A 200 without a message id is the provider misbehaving; asking again with the same key is safe.
    if (!parsed.success) throw new ProviderUnavailableError(`${this.url}: the answer carries no message id`);
    return { messageId: parsed.data.id };
  }
}
