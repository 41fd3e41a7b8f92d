/**
 * The preflight's decisions (P5) over facts written by hand: what the stage needs (from a
 * template or the declaration) against what the account answered.
 */
import { loadPipelineConfig } from '../../../lib/config';
import { referencePipeline } from '../../../examples/reference/pipeline';
import {
  checkBootstrap,
  checkConcurrency,
  checkRegionFeatures,
  checkRegionServices,
  checkRetainedResources,
  concurrencyDemand,
  evaluatePreflight,
  preflightChecklist,
  preflightFailed,
  stageFromConfig,
  stageFromTemplate,
  type PreflightFacts,
  type StageModel,
} from '../../../lib/audit/preflight';

const STACK = 'tenang-unit';
const REGION = 'eu-west-1';

/** The reference pipeline's stage model, from its declaration. */
function referenceStage(): StageModel {
  return stageFromConfig(loadPipelineConfig(referencePipeline('unit', REGION)), STACK);
}

/** Facts where everything fits; each test changes what it judges. */
function facts(overrides: Partial<PreflightFacts> = {}): PreflightFacts {
  return {
    stage: referenceStage(),
    region: REGION,
    concurrency: { ok: true, value: { limit: 1000, unreserved: 1000 } },
    streamShards: new Map(),
    assumedShards: 1,
    stack: { exists: false },
    existing: { ok: true, value: { tables: new Set(), logGroups: new Set() } },
    bootstrap: {
      ok: true,
      value: { version: 21, from: 'SSM parameter /cdk-bootstrap/hnb659fds/version = 21' },
    },
    services: { ok: true, value: new Map(referenceStage().services.map((s) => [s, true])) },
    ...overrides,
  };
}

/** A template with two queue mappings, a stream mapping, a decoupled one and retained names. */
const TEMPLATE = {
  Parameters: {
    BootstrapVersion: {
      Type: 'AWS::SSM::Parameter::Value<String>',
      Default: '/cdk-bootstrap/custom1/version',
    },
  },
  Rules: {
    CheckBootstrapVersion: {
      Assertions: [
        {
          Assert: {
            'Fn::Not': [
              { 'Fn::Contains': [['1', '2', '3', '4', '5', '6', '7'], { Ref: 'BootstrapVersion' }] },
            ],
          },
        },
      ],
    },
  },
  Resources: {
    Orders: {
      Type: 'AWS::DynamoDB::Table',
      DeletionPolicy: 'RetainExceptOnCreate',
      Properties: {
        TableName: 'tenang-unit-orders',
        StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      },
    },
    Scratch: {
      Type: 'AWS::DynamoDB::Table',
      DeletionPolicy: 'Delete',
      Properties: { TableName: 'tenang-unit-scratch' },
    },
    Unnamed: { Type: 'AWS::Logs::LogGroup', DeletionPolicy: 'Retain', Properties: {} },
    WorkerLogs: {
      Type: 'AWS::Logs::LogGroup',
      DeletionPolicy: 'RetainExceptOnCreate',
      Properties: { LogGroupName: '/aws/lambda/tenang-unit-worker' },
    },
    Worker: {
      Type: 'AWS::Lambda::Function',
      Properties: { FunctionName: 'tenang-unit-worker', Runtime: 'nodejs22.x', Architectures: ['arm64'] },
    },
    Relay: {
      Type: 'AWS::Lambda::Function',
      Properties: { FunctionName: 'tenang-unit-relay', Runtime: 'nodejs22.x' },
    },
    Api: {
      Type: 'AWS::Lambda::Function',
      Properties: { FunctionName: 'tenang-unit-api', ReservedConcurrentExecutions: 4 },
    },
    Queue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'q.fifo', FifoQueue: true } },
    Bounded: {
      Type: 'AWS::Lambda::EventSourceMapping',
      Properties: {
        FunctionName: { Ref: 'Worker' },
        EventSourceArn: { 'Fn::GetAtt': ['Queue', 'Arn'] },
        ScalingConfig: { MaximumConcurrency: 7 },
      },
    },
    Unbounded: {
      Type: 'AWS::Lambda::EventSourceMapping',
      Properties: {
        FunctionName: 'arn:aws:lambda:eu-west-1:123456789012:function:tenang-unit-worker',
        EventSourceArn: 'arn:aws:sqs:eu-west-1:123456789012:other',
      },
    },
    Stream: {
      Type: 'AWS::Lambda::EventSourceMapping',
      Properties: {
        FunctionName: { Ref: 'Relay' },
        EventSourceArn: { 'Fn::GetAtt': ['Orders', 'StreamArn'] },
        ParallelizationFactor: 3,
      },
    },
    Decoupled: {
      Type: 'AWS::Lambda::EventSourceMapping',
      Metadata: { 'tenang:stream-arn': { 'Fn::GetAtt': ['Orders', 'StreamArn'] } },
      Properties: { FunctionName: { Ref: 'Relay' }, EventSourceArn: { 'Fn::GetAtt': ['Queue', 'Arn'] } },
    },
    Cache: { Type: 'AWS::ElastiCache::ServerlessCache', Properties: { Engine: 'valkey' } },
  },
};

describe('Preflight (P5)', () => {
  describe('Function: stageFromTemplate', () => {
    it('when a template is read, it finds each mapping, function, retained fixed name, service and feature', () => {
      // Act
      const stage = stageFromTemplate(TEMPLATE, STACK, 'template.json');

      // Assess
      expect(stage.mappings).toEqual([
        { functionName: 'tenang-unit-worker', kind: 'queue', maxConcurrency: 7, parallelizationFactor: 1 },
        { functionName: 'tenang-unit-worker', kind: 'queue', parallelizationFactor: 1 },
        {
          functionName: 'tenang-unit-relay',
          kind: 'stream',
          parallelizationFactor: 3,
          streamTable: 'tenang-unit-orders',
        },
        // The emulator target's mapping reads the stream its metadata names.
        {
          functionName: 'tenang-unit-relay',
          kind: 'stream',
          parallelizationFactor: 1,
          streamTable: 'tenang-unit-orders',
        },
      ]);
      expect(stage.functions).toEqual([
        { name: 'tenang-unit-worker' },
        { name: 'tenang-unit-relay' },
        { name: 'tenang-unit-api', reservedConcurrency: 4 },
      ]);
      // A table deleted with the stack, and a retained log group without a fixed name, block nothing.
      expect(stage.retainedTables).toEqual(['tenang-unit-orders']);
      expect(stage.retainedLogGroups).toEqual(['/aws/lambda/tenang-unit-worker']);
      expect(stage.services).toEqual([
        'cloudformation',
        'dynamodb',
        'dynamodbstreams',
        'elasticache',
        'lambda',
        'logs',
        'sqs',
      ]);
      expect(stage.features).toEqual([
        'Lambda runtime nodejs22.x',
        'Lambda architecture arm64',
        'Lambda architecture x86_64',
        'ElastiCache Serverless (valkey)',
        'SQS FIFO queues',
      ]);
      // The rule refuses 1–7: 8 is required, under the template's qualifier.
      expect(stage.bootstrap).toEqual({
        version: 8,
        parameter: '/cdk-bootstrap/custom1/version',
        from: 'the template (CheckBootstrapVersion)',
      });
    });

    it("when a cdk.out manifest names the bootstrap version, it wins over the template's rule", () => {
      // Act
      const stage = stageFromTemplate(TEMPLATE, STACK, 'cdk.out', {
        requiresBootstrapStackVersion: 21,
        bootstrapStackVersionSsmParameter: '/cdk-bootstrap/custom1/version',
      });

      // Assess
      expect(stage.bootstrap?.version).toBe(21);
      expect(stage.bootstrap?.from).toMatch(/manifest/);
    });

    it('when the template has no BootstrapVersion parameter (the emulator target), no bootstrap is required', () => {
      expect(stageFromTemplate({ Resources: {} }, STACK, 'x').bootstrap).toBeUndefined();
    });
  });

  describe('Function: stageFromConfig', () => {
    it("when the reference declaration is read, it has the pipeline's mappings, functions, tables and log groups, and says what it cannot know", () => {
      // Act
      const stage = referenceStage();

      // Assess
      expect(stage.mappings.filter((m) => m.kind === 'queue').map((m) => m.maxConcurrency)).toEqual([
        10, 5, 5,
      ]);
      expect(stage.mappings.filter((m) => m.kind === 'stream').map((m) => m.streamTable)).toEqual([
        'tenang-unit-orders',
        'tenang-unit-orders',
      ]);
      expect(stage.functions.map((f) => f.name)).toEqual([
        'tenang-unit-payment-consumer',
        'tenang-unit-notification-consumer',
        'tenang-unit-inventory-consumer',
        'tenang-unit-cache-invalidator',
        'tenang-unit-outbox-relay',
        'tenang-unit-flag-reconciler',
        'tenang-unit-cache-admin',
      ]);
      expect(stage.retainedTables).toEqual([
        'tenang-unit-idempotency',
        'tenang-unit-orders',
        'tenang-unit-locks',
        'tenang-unit-dedup',
        'tenang-unit-inventory',
      ]);
      expect(stage.retainedLogGroups).toContain('/aws/lambda/tenang-unit-flag-reconciler');
      expect(stage.bootstrap?.version).toBe(6);
      expect(stage.notes.join(' ')).toMatch(/functions the app adds to the stack itself.*--cdk-out/);
    });
  });

  describe('Function: concurrencyDemand', () => {
    it('when no stream exists yet, it adds the mappings, the assumed shards and 1 per other function', () => {
      // Act
      const demand = concurrencyDemand(referenceStage(), new Map(), 1);

      // Assess: 10 + 5 + 5, two stream consumers on one shard each, the reconciler and the cache admin.
      expect(demand.total).toBe(24);
      expect(demand.parts).toEqual([
        'queue mappings 10+5+5',
        'stream mappings 1+1 (shards × parallelization factor)',
        '2 other functions 2',
      ]);
      expect(demand.assumptions).toHaveLength(2);
    });

    it('when the stream exists, its open shards times the factor count, and an unbounded queue mapping counts 1,000', () => {
      // Act
      const demand = concurrencyDemand(
        stageFromTemplate(TEMPLATE, STACK, 'x'),
        new Map([['tenang-unit-orders', 4]]),
        1,
      );

      // Assess: 7 + 1000 (unbounded) + 4 × 3 + 4 × 1 + the api's reserved 4.
      expect(demand.total).toBe(7 + 1000 + 12 + 4 + 4);
      expect(demand.assumptions).toEqual([expect.stringMatching(/no maximum concurrency: counted as 1000/)]);
    });
  });

  describe('Function: checkConcurrency', () => {
    it('when the unreserved concurrency holds the need plus headroom, it passes', () => {
      expect(checkConcurrency(facts())).toMatchObject({ status: 'pass', remedy: null });
    });

    it('when it holds the need but not the headroom, it warns with what to do', () => {
      // Act: 24 needed, headroom 5
      const result = checkConcurrency(
        facts({ concurrency: { ok: true, value: { limit: 1000, unreserved: 25 } } }),
      );

      // Assess
      expect(result.status).toBe('warn');
      expect(result.message).toMatch(
        /can run 24 concurrent executions.*25 unreserved of 1000.*less than 5 to spare/,
      );
      expect(result.remedy).toMatch(/Concurrent executions/);
    });

    it("when a new account's quota is too small, it fails and says which quota to ask for and how much", () => {
      // Act
      const result = checkConcurrency(
        facts({ concurrency: { ok: true, value: { limit: 10, unreserved: 10 } } }),
      );

      // Assess: 24 needed + 5 headroom, nothing reserved by others.
      expect(result.status).toBe('fail');
      expect(result.message).toMatch(/10 unreserved of 10.*throttled/);
      expect(result.remedy).toContain(
        'aws service-quotas request-service-quota-increase --service-code lambda --quota-code L-B99A9384 --desired-value 29 --region eu-west-1',
      );
      expect(result.remedy).toMatch(/batch\.maxConcurrency/);
    });

    it('when the account would not say, it is skipped with the reason', () => {
      // Act
      const result = checkConcurrency(
        facts({ concurrency: { ok: false, reason: 'GetAccountSettings: not allowed' } }),
      );

      // Assess
      expect(result).toMatchObject({ status: 'skipped' });
      expect(result.message).toMatch(/could not be read: GetAccountSettings: not allowed/);
    });
  });

  describe('Function: checkRetainedResources', () => {
    it('when a table of the stage exists and its stack does not, it fails with the delete and import commands', () => {
      // Act
      const result = checkRetainedResources(
        facts({
          existing: { ok: true, value: { tables: new Set(['tenang-unit-orders']), logGroups: new Set() } },
        }),
      );

      // Assess
      expect(result.status).toBe('fail');
      expect(result.resources).toEqual(['table tenang-unit-orders']);
      expect(result.message).toMatch(/stack tenang-unit does not exist.*already exists/);
      expect(result.remedy).toContain('aws dynamodb delete-table --table-name tenang-unit-orders');
      expect(result.remedy).toContain('aws dynamodb create-backup --table-name tenang-unit-orders');
      expect(result.remedy).toContain('npx cdk import tenang-unit');
    });

    it('when the table is part of the stack, it passes; a log group outside the existing stack fails', () => {
      // Prepare
      const logGroup = '/aws/lambda/tenang-unit-payment-consumer';
      const existing = {
        ok: true as const,
        value: { tables: new Set(['tenang-unit-orders']), logGroups: new Set([logGroup]) },
      };

      // Act
      const inStack = checkRetainedResources(
        facts({
          existing,
          stack: {
            exists: true,
            status: 'UPDATE_COMPLETE',
            physicalIds: new Set(['tenang-unit-orders', logGroup]),
          },
        }),
      );
      const outside = checkRetainedResources(
        facts({
          existing,
          stack: { exists: true, status: 'UPDATE_COMPLETE', physicalIds: new Set(['tenang-unit-orders']) },
        }),
      );

      // Assess
      expect(inStack.status).toBe('pass');
      expect(outside).toMatchObject({ status: 'fail', resources: [`log group ${logGroup}`] });
      expect(outside.remedy).toContain(`aws logs delete-log-group --log-group-name ${logGroup}`);
    });
  });

  describe('Function: checkBootstrap', () => {
    it('when the account is not bootstrapped, it fails with the bootstrap command', () => {
      // Act
      const result = checkBootstrap(
        facts({ bootstrap: { ok: true, value: { version: undefined, from: 'neither exists' } } }),
      );

      // Assess
      expect(result.status).toBe('fail');
      expect(result.remedy).toBe('bootstrap it: npx cdk bootstrap aws://ACCOUNT-ID/eu-west-1');
    });

    it('when the bootstrap is older than the template needs, it fails; at or above, it passes', () => {
      const old = checkBootstrap(facts({ bootstrap: { ok: true, value: { version: 5, from: 'SSM' } } }));
      expect(old.status).toBe('fail');
      expect(old.message).toMatch(/needs bootstrap version 6 or later.*is version 5/);
      expect(
        checkBootstrap(facts({ bootstrap: { ok: true, value: { version: 6, from: 'SSM' } } })).status,
      ).toBe('pass');
    });

    it('when the template uses another qualifier, the command names it', () => {
      // Act
      const result = checkBootstrap(
        facts({
          stage: stageFromTemplate(TEMPLATE, STACK, 'x'),
          bootstrap: { ok: true, value: { version: undefined, from: 'neither exists' } },
        }),
      );

      // Assess
      expect(result.remedy).toMatch(/--qualifier custom1$/);
    });
  });

  describe('Function: checkRegionServices and checkRegionFeatures', () => {
    it('when a service the stage uses is not offered, it fails naming it; features are never passed', () => {
      // Prepare
      const services = new Map(referenceStage().services.map((s) => [s, s !== 'elasticache']));

      // Act
      const result = checkRegionServices(facts({ services: { ok: true, value: services } }));
      const features = checkRegionFeatures(facts({ stage: stageFromTemplate(TEMPLATE, STACK, 'x') }));

      // Assess
      expect(result).toMatchObject({ status: 'fail', resources: ['elasticache'] });
      expect(features.status).toBe('skipped');
      expect(features.message).toMatch(/not checkable read-only.*nodejs22\.x.*ElastiCache Serverless/);
    });
  });

  describe('Function: preflightChecklist', () => {
    it('when checks are folded into the live audit, a warning is a warning-level failure and a skipped check not-checkable', () => {
      // Act
      const checks = evaluatePreflight(
        facts({ concurrency: { ok: true, value: { limit: 1000, unreserved: 25 } } }),
      );
      const items = preflightChecklist(checks);

      // Assess
      expect(preflightFailed(checks)).toBe(false);
      expect(items.map((i) => [i.ruleId, i.status, i.level])).toEqual([
        ['Tenang-P5-Concurrency', 'fail', 'warning'],
        ['Tenang-P5-RetainedResources', 'pass', 'error'],
        ['Tenang-P5-Bootstrap', 'pass', 'error'],
        ['Tenang-P5-RegionServices', 'pass', 'error'],
        ['Tenang-P5-RegionFeatures', 'not-checkable', 'note'],
      ]);
      expect(items[0]?.why).toMatch(/to fix: ask for a "Concurrent executions" quota/);
      expect(items.every((i) => i.featureId === 'P5')).toBe(true);
    });
  });
});
