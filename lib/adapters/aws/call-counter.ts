/**
 * Counts the commands an AWS SDK v3 client sends (DynamoDB, SQS, any other), by name, with a
 * middleware at the `initialize` step: one entry per `send`, whatever the SDK's own retries do
 * underneath. Document clients built with `DynamoDBDocumentClient.from(client)` share the
 * client's stack, so they count too. The integration tests and the benchmark both use it.
 */
import type { MetadataBearer, MiddlewareStack } from '@smithy/types';

/** The commands a client sent, in order ("PutItemCommand", "ChangeMessageVisibilityCommand", …). */
export interface SdkCallLog {
  /** Every command name since the last reset. */
  readonly calls: () => readonly string[];
  /** Forgets the calls seen so far. */
  readonly reset: () => void;
}

/** Any SDK v3 client: what the counter needs of it is its middleware stack. */
export interface SdkClientLike<Input extends object, Output extends MetadataBearer> {
  readonly middlewareStack: MiddlewareStack<Input, Output>;
}

/**
 * Starts counting the commands `client` sends; returns the log. A second counter on the same
 * client needs another `name` (a middleware of the same name replaces the first).
 */
export function countSdkCalls<Input extends object, Output extends MetadataBearer>(
  client: SdkClientLike<Input, Output>,
  name = 'tenangCallCounter',
): SdkCallLog {
  let calls: string[] = [];
  client.middlewareStack.add(
    (next, context) => (args) => {
      calls.push(String(context.commandName ?? 'unknown'));
      return next(args);
    },
    { step: 'initialize', name, override: true },
  );
  return {
    calls: () => [...calls],
    reset: () => {
      calls = [];
    },
  };
}
