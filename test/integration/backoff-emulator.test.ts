/**
 * The backoff bench's contending clients (bench/backoff-emulator.ts) against moto, at a size a
 * test can afford: each protocol and strategy must leave the hot item incremented exactly once
 * per client, with the SDK calls its protocol makes per attempt (contend checks both and throws
 * otherwise), so the figures `npm run bench` reports come from clients that work.
 */
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BACKOFF_STRATEGIES, callsPerAttempt, CONTENTION_PROTOCOLS } from '../../bench/backoff';
import { contend, createContentionTable } from '../../bench/backoff-emulator';
import { dynamoClient, uniqueName } from '../helpers/aws';

jest.setTimeout(120_000);

const CLIENTS = 6;

describe('Function: contend (moto)', () => {
  let admin: DynamoDBClient;
  const table = uniqueName('backoff-contend');

  beforeAll(async () => {
    admin = dynamoClient();
    await createContentionTable(admin, table);
  });

  afterAll(async () => {
    await admin.send(new DeleteTableCommand({ TableName: table }));
    admin.destroy();
  });

  const cases = CONTENTION_PROTOCOLS.flatMap((protocol) =>
    BACKOFF_STRATEGIES.map((strategy) => [protocol, strategy] as const),
  );

  it.each(cases)(
    'when %s clients back off with %s, every client commits once, in at least one attempt each',
    async (protocol, strategy) => {
      // Act
      const run = await contend(admin, table, protocol, strategy, 1, CLIENTS);

      // Assess: contend itself checked the item (counter = version = CLIENTS) and calls per attempt
      expect(run.attempts).toBeGreaterThanOrEqual(CLIENTS);
      expect(run.attempts).toBeLessThanOrEqual(CLIENTS * CLIENTS);
      expect(run.calls).toBe(run.attempts * callsPerAttempt(protocol));
    },
  );
});
