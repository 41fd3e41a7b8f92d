/**
 * Why the reference app keeps grants that this repository's test runs never use, for
 * `npm run iam-report` (bin/iam-report.ts): the report looks these up before tenang's own
 * reasons, which hold for any app (lib/local/iam/usage.ts UNUSED_GRANT_REASONS). Each entry
 * matches a grant by its action (case-insensitive glob) and, when given, its resource (glob).
 */
export const REFERENCE_GRANT_REASONS: readonly {
  readonly action: string;
  readonly resource?: string;
  readonly reason: string;
}[] = [
  {
    action: 'dynamodb:GetItem',
    resource: '*:table/*-orders',
    reason:
      "The payment consumer reads the order when its conditional transition fails, to tell a concurrent update from an illegal one (DynamoDbOrderStore.rejection); the test runs' captures never lose that race.",
  },
  {
    action: 'sqs:SendMessage',
    resource: '*-notification-send',
    reason:
      "The notification consumer's deferrals (degrade mode, open circuit, rate limit) re-send the job with a delay; no test run defers one on the shared platforms, and test/integration/iam-mutation.test.ts shows what its absence does.",
  },
  {
    action: 'dynamodb:BatchWriteItem',
    resource: '*:table/*-dedup',
    reason:
      "The outbox relay's dedup confirms go in one BatchWriteItem when a batch's confirms overlap one already being written (DynamoDbDedupStore.confirm), which depends on timing: a run whose confirms never overlap puts each with PutItem. A smoke scenario run without this grant was denied it four times.",
  },
  {
    action: 'dynamodb:DeleteItem',
    resource: '*:table/*-dedup',
    reason:
      'Gives a dedup claim back when the send after it fails, so the retry can claim again (DynamoDbDedupStore.release); no send after a claim fails in the test runs of the outbox relay and ingress.',
  },
];
