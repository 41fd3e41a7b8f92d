import {
  cachedEntitySources,
  cachedEntityTables,
  IDEMPOTENCY_TABLE,
  PipelineConfigError,
  loadPipelineConfig,
  queueUrlVariable,
  tableVariable,
  type PipelineInput,
} from '../../../lib/config';
import { jobTypeInput, pipelineInput, streamConsumerInput } from './builders';

/** The problems a declaration is rejected with. */
function problemsOf(input: PipelineInput): readonly string[] {
  try {
    loadPipelineConfig(input);
  } catch (error) {
    if (error instanceof PipelineConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a PipelineConfigError, but the declaration loaded');
}

describe('Function: loadPipelineConfig', () => {
  describe('Declared tables', () => {
    it('when an app declares a table, it is resolved with its physical name after tenang idempotency table', () => {
      // Prepare
      const input = pipelineInput({
        tables: [
          { name: 'orders', partitionKey: 'orderId', stream: 'NEW_AND_OLD_IMAGES' },
          { name: 'invoice-lines', partitionKey: 'invoiceId', sortKey: 'line', ttl: 'expiresAt' },
        ],
      });

      // Act
      const { tables } = loadPipelineConfig(input);

      // Assess
      expect(tables).toEqual([
        { ...IDEMPOTENCY_TABLE, tableName: 'tenang-test-idempotency' },
        {
          name: 'orders',
          partitionKey: 'orderId',
          stream: 'NEW_AND_OLD_IMAGES',
          tableName: 'tenang-test-orders',
        },
        {
          name: 'invoice-lines',
          partitionKey: 'invoiceId',
          sortKey: 'line',
          ttl: 'expiresAt',
          tableName: 'tenang-test-invoice-lines',
        },
      ]);
    });

    it('when a job type uses a table nobody declared, it fails naming every such table and the known ones', () => {
      // Prepare
      const input = pipelineInput({
        jobTypes: [
          jobTypeInput({
            resources: { tables: { orders: ['GetItem'], invoices: ['PutItem'], ledger: ['GetItem'] } },
          }),
        ],
      });

      // Act
      const problems = problemsOf(input);

      // Assess
      expect(problems).toEqual([
        'jobTypes[0].resources.tables: "invoices" is not a declared table (known: idempotency, orders)',
        'jobTypes[0].resources.tables: "ledger" is not a declared table (known: idempotency, orders)',
      ]);
    });

    it('when tables are declared twice, badly named, or as tenang idempotency table, it lists every problem', () => {
      // Prepare
      const input = pipelineInput({
        tables: [
          { name: 'orders', partitionKey: 'orderId', stream: 'NEW_AND_OLD_IMAGES' },
          { name: 'orders', partitionKey: 'id' },
          { name: 'Invoices', partitionKey: 'id' },
          { name: 'idempotency', partitionKey: 'id' },
        ],
      });

      // Act
      const problems = problemsOf(input);

      // Assess
      expect(problems).toEqual([
        expect.stringMatching(/^tables\[2\]\.name: must be kebab-case/),
        expect.stringMatching(/^tables\[3\]\.name: "idempotency" is tenang's own table/),
        'tables: table "orders" is declared more than once',
      ]);
    });
  });

  describe('Stream consumers', () => {
    it('when a stream consumer declares its table, queues, tables and cache, it loads them with their dependencies', () => {
      // Prepare
      const input = pipelineInput({
        streamConsumers: [
          streamConsumerInput({
            consumer: 'order-relay',
            entry: 'streams/order-relay.ts',
            resources: {
              tables: { orders: ['GetItem'] },
              queues: ['order.ship'],
              cache: true,
              degradeFlag: true,
            },
          }),
        ],
      });

      // Act
      const [relay] = loadPipelineConfig(input).streamConsumers;

      // Assess
      expect(relay).toMatchObject({
        table: 'orders',
        entry: 'streams/order-relay.ts',
        resources: {
          tables: { orders: ['GetItem'] },
          queues: ['order.ship'],
          cache: true,
          degradeFlag: true,
        },
        dependsOn: ['orders-table stream', 'orders-table', 'order.ship queue', 'cache'],
      });
    });

    it('when a stream consumer names no resources, it uses none', () => {
      // Act
      const [consumer] = loadPipelineConfig(pipelineInput()).streamConsumers;

      // Assess
      expect(consumer?.resources).toEqual({ tables: {}, queues: [], cache: false, degradeFlag: false });
    });

    it('when its table is unknown or has no stream, and it sends to an unknown job type, it lists every problem', () => {
      // Prepare
      const input = pipelineInput({
        tables: [
          { name: 'orders', partitionKey: 'orderId', stream: 'NEW_AND_OLD_IMAGES' },
          { name: 'invoices', partitionKey: 'invoiceId' },
        ],
        streamConsumers: [
          streamConsumerInput({ consumer: 'a-relay', table: 'payments' }),
          streamConsumerInput({
            consumer: 'b-relay',
            table: 'invoices',
            resources: { tables: { ledger: ['PutItem'] }, queues: ['order.ship', 'order.cancel'] },
          }),
        ],
      });

      // Act
      const problems = problemsOf(input);

      // Assess
      expect(problems).toEqual([
        'streamConsumers[0].table: "payments" is not a declared table (declared: idempotency, orders, invoices)',
        'streamConsumers[1].table: the table "invoices" declares no stream',
        'streamConsumers[1].resources.tables: "ledger" is not a declared table (known: idempotency, orders, invoices)',
        'streamConsumers[1].resources.queues: "order.cancel" is not a declared job type (known: order.ship)',
      ]);
    });
  });

  describe('Dependencies', () => {
    it('when a job type uses providers and tables, its dependencies are derived from them, then its extra words', () => {
      // Prepare
      const input = pipelineInput({
        jobTypes: [
          jobTypeInput({
            resources: { tables: { orders: ['GetItem'] }, providers: ['payment'] },
            dependencies: ['ses'],
          }),
        ],
      });

      // Act
      const [job] = loadPipelineConfig(input).jobTypes;

      // Assess
      expect(job?.dependsOn).toEqual(['payment-provider', 'orders-table', 'ses']);
    });
  });
});

describe('Function: tableVariable', () => {
  it('when the table name has hyphens, the variable has underscores', () => {
    expect(tableVariable('invoice-lines')).toBe('INVOICE_LINES_TABLE');
  });
});

describe('Function: queueUrlVariable', () => {
  it('when given a job type, it names its queue URL variable after the whole name', () => {
    expect(queueUrlVariable('notification.send')).toBe('NOTIFICATION_SEND_QUEUE_URL');
  });
});

describe('Function: cachedEntitySources', () => {
  const invoices = { name: 'invoices', partitionKey: 'invoiceId', stream: 'NEW_AND_OLD_IMAGES' } as const;
  const ledger = { name: 'ledger', partitionKey: 'entryId', sortKey: 'line' } as const;
  const withEntities = (
    entities: readonly Record<string, string>[],
    tables = [ledger, invoices],
  ): PipelineInput => {
    const input = pipelineInput({ tables, streamConsumers: [streamConsumerInput({ table: 'invoices' })] });
    return {
      ...input,
      stage: { ...input.stage, cache: { ...input.stage.cache, entities } },
    } as PipelineInput;
  };
  const INVOICE = { name: 'invoice', table: 'invoices', key: 'invoiceId', version: 'rev' };

  it('when the stage declares a cached entity, it is resolved with its table', () => {
    // Act
    const config = loadPipelineConfig(withEntities([INVOICE]));

    // Assess
    expect(cachedEntitySources(config)).toEqual([
      {
        entity: INVOICE,
        table: expect.objectContaining({ name: 'invoices', tableName: 'tenang-test-invoices' }),
      },
    ]);
    expect(cachedEntityTables(config).map((t) => t.name)).toEqual(['invoices']);
  });

  it('when the stage declares no cached entity, there is none (the default)', () => {
    // Act
    const config = loadPipelineConfig(withEntities([]));

    // Assess
    expect(config.stage.cache.entities).toEqual([]);
    expect(cachedEntitySources(config)).toEqual([]);
  });

  it.each([
    [
      'a table not declared',
      { ...INVOICE, table: 'receipts' },
      'stage.cache.entities[0].table: "receipts" is not a declared table (declared: ledger, invoices)',
    ],
    [
      "tenang's idempotency table",
      { ...INVOICE, table: IDEMPOTENCY_TABLE.name },
      `stage.cache.entities[0].table: "${IDEMPOTENCY_TABLE.name}" is not a declared table`,
    ],
    [
      'a key that is not the partition key',
      { ...INVOICE, key: 'number' },
      'stage.cache.entities[0].key: "number" is not the partition key of the table "invoices" ("invoiceId")',
    ],
    [
      'a table with a sort key',
      { ...INVOICE, table: 'ledger', key: 'entryId' },
      'stage.cache.entities[0].table: the table "ledger" has a sort key ("line")',
    ],
    [
      'the key as its version',
      { ...INVOICE, version: 'invoiceId' },
      'stage.cache.entities[0].version: must not be the key attribute "invoiceId"',
    ],
    [
      'a name that is not kebab-case',
      { ...INVOICE, name: 'Invoice:x' },
      'stage.cache.entities.0.name: must be kebab-case',
    ],
    [
      'no version attribute',
      { name: 'invoice', table: 'invoices', key: 'invoiceId' },
      'stage.cache.entities.0.version:',
    ],
  ])('when an entity names %s, the declaration is refused saying so', (_, entity, problem) => {
    // Act
    const problems = problemsOf(withEntities([entity]));

    // Assess
    expect(problems).toEqual([expect.stringContaining(problem)]);
  });

  it('when an entity is declared twice, the declaration is refused naming it', () => {
    expect(problemsOf(withEntities([INVOICE, INVOICE]))).toEqual([
      'stage.cache.entities: entity "invoice" is declared more than once',
    ]);
  });
});
