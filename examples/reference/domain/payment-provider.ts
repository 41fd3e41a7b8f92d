/** PaymentProvider over the provider's HTTP API: `POST {baseUrl}/charges` with an Idempotency-Key (I3, D4). */
import * as z from 'tenang/zod';
import type { Charge, ChargeRequest, PaymentProvider } from './payment';
import { postJson, ProviderUnavailableError } from 'tenang/runtime';

const ChargeAnswer = z.object({
  id: z.string().check(z.minLength(1)),
  /** Set by providers that answer a repeated key from their idempotency store. */
  replayed: z.optional(z.boolean()),
});

/** Options of HttpPaymentProvider. */
export interface HttpPaymentProviderOptions {
  /** Base URL, without a trailing path (e.g. https://payments.example.com). */
  readonly baseUrl: string;
  /** Per-call timeout; keep it well under the function timeout (D4). */
  readonly timeoutMs: number;
}

/** Captures charges through the provider's HTTP API. */
export class HttpPaymentProvider implements PaymentProvider {
  private readonly url: string;

  public constructor(private readonly options: HttpPaymentProviderOptions) {
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/charges`;
  }

  public async capture(
    request: ChargeRequest,
    opts: { idempotencyKey: string; correlationId: string },
  ): Promise<Charge> {
    const answer = await postJson<unknown>(this.url, request, {
      idempotencyKey: opts.idempotencyKey,
      correlationId: opts.correlationId,
      timeoutMs: this.options.timeoutMs,
    });
    const parsed = ChargeAnswer.safeParse(answer);
    // A 200 without a charge id is the provider misbehaving; asking again with the same key is safe.
    if (!parsed.success) throw new ProviderUnavailableError(`${this.url}: the answer carries no charge id`);
    return { chargeId: parsed.data.id, replayed: parsed.data.replayed ?? false };
  }
}
