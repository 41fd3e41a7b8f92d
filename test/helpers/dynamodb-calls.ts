/**
 * Counts the commands a DynamoDB client sends, by name, with a middleware at the `initialize`
 * step: one entry per `send`, whatever the SDK's own retries do underneath. Document clients
 * built with `DynamoDBDocumentClient.from(client)` share the client's stack, so they count too.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** The commands a client sent, in order ("PutItemCommand", "TransactWriteItemsCommand", …). */
export interface DynamoDbCallLog {
  /** Every command name since the last reset. */
  readonly calls: () => readonly string[];
  /** Forgets the calls seen so far. */
  readonly reset: () => void;
}

/** Starts counting the commands a DynamoDB client sends; returns the log. */
export function countDynamoDbCalls(client: DynamoDBClient, name = 'tenangTestCallCounter'): DynamoDbCallLog {
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
