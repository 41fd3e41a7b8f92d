/**
 * The template rules as tightened, one small template per behaviour, read the way
 * `tenang audit` reads a file (readTemplateText for YAML, auditTemplates for the checklist):
 * parameter defaults, Fn::If, stream sources, R6's bounds, D2's batching window, alarm matching,
 * imported queues, DLQs and TTL tables found by usage, and D4 on consumers only.
 */
import type { ChecklistItem } from '../../../lib/audit/checklist';
import { auditTemplates, type TemplateAudit } from '../../../lib/audit/template-audit';
import { readTemplateText } from '../../../lib/audit/template-input';

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

/** Audits a template object, or a YAML text read as the CLI reads a file. */
function audit(template: Record<string, unknown> | string): TemplateAudit {
  const stack =
    typeof template === 'string'
      ? readTemplateText(template, 'template.yaml')
      : { name: 'template', template };
  return auditTemplates([stack]);
}

function item(result: TemplateAudit, ruleId: string): ChecklistItem {
  const found = result.items.find((i) => i.ruleId === ruleId);
  if (found === undefined) throw new Error(`no checklist item ${ruleId}`);
  return found;
}

/** A queue, its consumer and the mapping between them; each part overridable. */
function queueConsumer(
  parts: {
    queue?: Record<string, unknown>;
    fn?: Record<string, unknown>;
    mapping?: Record<string, unknown>;
    extra?: Resources;
  } = {},
): Resources {
  return {
    Queue: {
      Type: 'AWS::SQS::Queue',
      Properties: { VisibilityTimeout: 60, ...parts.queue },
    },
    Consumer: {
      Type: 'AWS::Lambda::Function',
      Properties: { Timeout: 10, MemorySize: 256, ...parts.fn },
    },
    Mapping: {
      Type: 'AWS::Lambda::EventSourceMapping',
      Properties: {
        EventSourceArn: { 'Fn::GetAtt': ['Queue', 'Arn'] },
        FunctionName: { Ref: 'Consumer' },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ...parts.mapping,
      },
    },
    ...parts.extra,
  };
}

/** A stream mapping's properties that satisfy R6 and D3; a test overrides one of them. */
const HANDLED_STREAM = {
  FunctionName: { Ref: 'Consumer' },
  StartingPosition: 'LATEST',
  BisectBatchOnFunctionError: true,
  MaximumRetryAttempts: 10,
  MaximumRecordAgeInSeconds: 3600,
  FunctionResponseTypes: ['ReportBatchItemFailures'],
  DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': ['Failures', 'Arn'] } } },
};

/** The resources a stream mapping needs besides its source. */
const STREAM_CONSUMER: Resources = {
  Consumer: { Type: 'AWS::Lambda::Function', Properties: { Timeout: 10, MemorySize: 256 } },
  Failures: { Type: 'AWS::SQS::Queue' },
};

const KINESIS_STREAM: Resources = {
  Stream: { Type: 'AWS::Kinesis::Stream', Properties: { ShardCount: 1 } },
};
const DYNAMODB_TABLE: Resources = {
  Table: {
    Type: 'AWS::DynamoDB::Table',
    Properties: {
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
    },
  },
};

/** Each kind of stream source, as its resources and the EventSourceArn that reads it. */
const STREAM_SOURCES: [string, Resources, unknown][] = [
  ['a Kinesis stream (!GetAtt Stream.Arn)', KINESIS_STREAM, { 'Fn::GetAtt': ['Stream', 'Arn'] }],
  [
    'a Kinesis enhanced fan-out consumer',
    {
      ...KINESIS_STREAM,
      FanOut: {
        Type: 'AWS::Kinesis::StreamConsumer',
        Properties: { ConsumerName: 'fan-out', StreamARN: { 'Fn::GetAtt': ['Stream', 'Arn'] } },
      },
    },
    { 'Fn::GetAtt': ['FanOut', 'ConsumerARN'] },
  ],
  ['a DynamoDB stream (!GetAtt Table.StreamArn)', DYNAMODB_TABLE, { 'Fn::GetAtt': ['Table', 'StreamArn'] }],
];

/** A stream mapping over `source`, with `overrides` on HANDLED_STREAM (undefined removes a key). */
function streamTemplate(
  source: Resources,
  eventSourceArn: unknown,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const properties = Object.fromEntries(
    Object.entries({ ...HANDLED_STREAM, EventSourceArn: eventSourceArn, ...overrides }).filter(
      ([, v]) => v !== undefined,
    ),
  );
  return {
    Resources: {
      ...source,
      ...STREAM_CONSUMER,
      Mapping: { Type: 'AWS::Lambda::EventSourceMapping', Properties: properties },
    },
  };
}

describe('Function: auditTemplates', () => {
  describe('parameters', () => {
    it('when a function timeout is a parameter with a default, it judges D2 on the default and says so', () => {
      // Prepare
      const template = {
        Parameters: { LambdaTimeout: { Type: 'Number', Default: 29 } },
        Resources: queueConsumer({ fn: { Timeout: { Ref: 'LambdaTimeout' } } }),
      };

      // Act
      const result = audit(template);

      // Assess
      const d2 = item(result, 'Tenang-D2');
      expect(d2.status).toBe('fail');
      expect(d2.why).toContain('timeout 29 s');
      expect(d2.why).toContain('with the default 29 of parameter LambdaTimeout');
    });

    it('when a function timeout is a parameter without a default, D2 is not-checkable naming the parameter', () => {
      // Prepare
      const template = {
        Parameters: { LambdaTimeout: { Type: 'Number' } },
        Resources: queueConsumer({ fn: { Timeout: { Ref: 'LambdaTimeout' } } }),
      };

      // Act
      const result = audit(template);

      // Assess
      const d2 = item(result, 'Tenang-D2');
      expect(d2.status).toBe('not-checkable');
      expect(d2.why).toContain('parameter LambdaTimeout has no Default');
      expect(result.findings).toContainEqual(
        expect.objectContaining({ ruleId: 'Tenang-D2', status: 'not-checkable', resource: 'Queue' }),
      );
    });
  });

  describe('Fn::If', () => {
    it('when one branch of Fn::If gives a timeout too long for the queue, D2 fails naming that branch', () => {
      // Prepare
      const template = `
Conditions:
  IsProd: !Equals [!Ref 'AWS::StackName', prod]
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 60
  Consumer:
    Type: AWS::Lambda::Function
    Properties:
      Timeout: !If [IsProd, 30, 5]
      MemorySize: 256
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      EventSourceArn: !GetAtt Queue.Arn
      FunctionName: !Ref Consumer
      FunctionResponseTypes: [ReportBatchItemFailures]
`;

      // Act
      const result = audit(template);

      // Assess
      const d2 = item(result, 'Tenang-D2');
      expect(d2.status).toBe('fail');
      expect(d2.why).toContain('timeout 30 s');
      expect(d2.why).toContain('with if IsProd');
    });

    it('when both branches of Fn::If fit the queue, D2 passes', () => {
      // Prepare
      const template = {
        Resources: queueConsumer({ fn: { Timeout: { 'Fn::If': ['IsProd', 10, 5] } } }),
      };

      // Act
      const result = audit(template);

      // Assess
      expect(item(result, 'Tenang-D2').status).toBe('pass');
    });

    it('when one branch of Fn::If drops ReportBatchItemFailures, D3 fails naming that branch', () => {
      // Prepare
      const template = {
        Resources: queueConsumer({
          mapping: {
            FunctionResponseTypes: {
              'Fn::If': ['Partial', ['ReportBatchItemFailures'], { Ref: 'AWS::NoValue' }],
            },
          },
        }),
      };

      // Act
      const result = audit(template);

      // Assess
      const d3 = item(result, 'Tenang-D3');
      expect(d3.status).toBe('fail');
      expect(d3.why).toContain('unless Partial');
    });
  });

  describe('stream sources', () => {
    it.each(STREAM_SOURCES)(
      'when a mapping reads %s without failure handling, R6 and D3 fail on it',
      (_name, source, arn) => {
        // Prepare
        const template = streamTemplate(source, arn, {
          BisectBatchOnFunctionError: undefined,
          MaximumRetryAttempts: undefined,
          MaximumRecordAgeInSeconds: undefined,
          DestinationConfig: undefined,
          FunctionResponseTypes: undefined,
        });

        // Act
        const result = audit(template);

        // Assess
        const r6 = item(result, 'Tenang-R6');
        expect(r6.status).toBe('fail');
        expect(r6.resources).toEqual(['Mapping']);
        expect(r6.why).toContain('BisectBatchOnFunctionError');
        expect(r6.why).toContain('DestinationConfig.OnFailure');
        expect(item(result, 'Tenang-D3')).toMatchObject({ status: 'fail', resources: ['Mapping'] });
      },
    );

    it.each(STREAM_SOURCES)(
      'when a mapping reads %s with bisect, bounds, a destination and partial responses, R6 and D3 pass',
      (_name, source, arn) => {
        // Prepare
        const template = streamTemplate(source, arn);

        // Act
        const result = audit(template);

        // Assess
        expect(item(result, 'Tenang-R6').status).toBe('pass');
        expect(item(result, 'Tenang-D3').status).toBe('pass');
      },
    );

    it.each([
      ['an import no stack exports', { 'Fn::ImportValue': 'shared-stream-arn' }, 'shared-stream-arn'],
      ['a parameter without a default', { Ref: 'StreamArn' }, 'parameter StreamArn has no Default'],
    ])(
      'when the EventSourceArn is %s, R6 and D3 are not-checkable saying what is unknown',
      (_name, arn, unknown) => {
        // Prepare
        const template = {
          Parameters: { StreamArn: { Type: 'String' } },
          ...streamTemplate({}, arn),
        };

        // Act
        const result = audit(template);

        // Assess
        for (const rule of ['Tenang-R6', 'Tenang-D3']) {
          const judged = item(result, rule);
          expect(judged.status).toBe('not-checkable');
          expect(judged.why).toContain(unknown);
        }
      },
    );
  });

  describe('R6 bounds', () => {
    const [, kinesis = {}, kinesisArn] = STREAM_SOURCES[0] ?? [];

    it.each([
      ['-1 (infinite)', -1],
      ['absent (the default, infinite)', undefined],
      ['100', 100],
    ])('when MaximumRetryAttempts is %s, R6 fails saying to bound it', (_name, retries) => {
      // Prepare
      const template = streamTemplate(kinesis, kinesisArn, { MaximumRetryAttempts: retries });

      // Act
      const result = audit(template);

      // Assess
      const r6 = item(result, 'Tenang-R6');
      expect(r6.status).toBe('fail');
      expect(r6.why).toContain('MaximumRetryAttempts is');
      expect(r6.why).toContain('set it between 1 and 19');
    });

    it('when MaximumRetryAttempts is 10, R6 passes', () => {
      // Prepare
      const template = streamTemplate(kinesis, kinesisArn, { MaximumRetryAttempts: 10 });

      // Act
      const result = audit(template);

      // Assess
      expect(item(result, 'Tenang-R6').status).toBe('pass');
    });

    const kept48h: Resources = {
      Stream: { Type: 'AWS::Kinesis::Stream', Properties: { RetentionPeriodHours: 48 } },
    };

    it.each([
      [
        'a DynamoDB stream (kept 24 h)',
        90_000,
        'fail',
        DYNAMODB_TABLE,
        { 'Fn::GetAtt': ['Table', 'StreamArn'] },
      ],
      ['a Kinesis stream kept 24 h by default', 90_000, 'fail', KINESIS_STREAM, kinesisArn],
      ['a Kinesis stream kept 48 h', 90_000, 'pass', kept48h, kinesisArn],
      ['a Kinesis stream kept 48 h', 200_000, 'fail', kept48h, kinesisArn],
    ])('when the record age on %s is %i s, R6 says %s', (_name, age, status, source, arn) => {
      // Prepare
      const template = streamTemplate(source, arn, { MaximumRecordAgeInSeconds: age });

      // Act
      const result = audit(template);

      // Assess
      const r6 = item(result, 'Tenang-R6');
      expect(r6.status).toBe(status);
      if (status === 'fail') expect(r6.why).toContain(`MaximumRecordAgeInSeconds is ${age} s`);
    });
  });

  describe('D2 and the batching window', () => {
    it('when the visibility is 6 × the timeout and there is no batching window, D2 passes', () => {
      // Prepare
      const template = {
        Resources: queueConsumer({ queue: { VisibilityTimeout: 60 }, fn: { Timeout: 10 } }),
      };

      // Act
      const result = audit(template);

      // Assess
      expect(item(result, 'Tenang-D2').status).toBe('pass');
    });

    it('when the visibility is 6 × the timeout but the mapping batches for 20 s, D2 fails asking for 80 s', () => {
      // Prepare
      const template = {
        Resources: queueConsumer({
          queue: { VisibilityTimeout: 60 },
          fn: { Timeout: 10 },
          mapping: { MaximumBatchingWindowInSeconds: 20 },
        }),
      };

      // Act
      const result = audit(template);

      // Assess
      const d2 = item(result, 'Tenang-D2');
      expect(d2.status).toBe('fail');
      expect(d2.why).toContain('batching window 20 s = 80 s');
      expect(d2.why).toContain('at least 80 s');
    });
  });

  describe('queue alarms', () => {
    /** A queue named by Fn::Sub, its consumer, and an age alarm on `dimension`. */
    function alarmed(dimension: unknown, alarm: Record<string, unknown> = {}, extra: Resources = {}) {
      return {
        Resources: queueConsumer({
          queue: { QueueName: { 'Fn::Sub': '${AWS::StackName}-jobs' } },
          extra: {
            Topic: { Type: 'AWS::SNS::Topic' },
            QueueAgeAlarm: {
              Type: 'AWS::CloudWatch::Alarm',
              Properties: {
                Namespace: 'AWS/SQS',
                MetricName: 'ApproximateAgeOfOldestMessage',
                Dimensions: [{ Name: 'QueueName', Value: dimension }],
                Statistic: 'Maximum',
                Period: 60,
                EvaluationPeriods: 1,
                Threshold: 300,
                ComparisonOperator: 'GreaterThanThreshold',
                AlarmActions: [{ Ref: 'Topic' }],
                ...alarm,
              },
            },
            ...extra,
          },
        }),
      };
    }

    it('when the QueueName dimension is !GetAtt Queue.QueueName (YAML), O3-QueueAge passes', () => {
      // Prepare
      const template = `
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 60
  Consumer:
    Type: AWS::Lambda::Function
    Properties: { Timeout: 10, MemorySize: 256 }
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      EventSourceArn: !GetAtt Queue.Arn
      FunctionName: !Ref Consumer
  Topic:
    Type: AWS::SNS::Topic
  QueueAgeAlarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Namespace: AWS/SQS
      MetricName: ApproximateAgeOfOldestMessage
      Dimensions:
        - Name: QueueName
          Value: !GetAtt [Queue, QueueName]
      Statistic: Maximum
      Period: 60
      EvaluationPeriods: 1
      Threshold: 300
      ComparisonOperator: GreaterThanThreshold
      AlarmActions: [!Ref Topic]
`;

      // Act
      const result = audit(template);

      // Assess
      expect(item(result, 'Tenang-O3-QueueAge')).toMatchObject({ status: 'pass' });
      expect(item(result, 'Tenang-O3-QueueAge').why).toContain('QueueAgeAlarm alarms on its');
    });

    it("when the QueueName dimension is the same Fn::Sub as the queue's QueueName, O3-QueueAge passes", () => {
      // Prepare
      const template = alarmed({ 'Fn::Sub': '${AWS::StackName}-jobs' });

      // Act
      const result = audit(template);

      // Assess
      expect(item(result, 'Tenang-O3-QueueAge').status).toBe('pass');
    });

    it('when the QueueName dimension is a different Fn::Sub, O3-QueueAge fails: no alarm watches the queue', () => {
      // Prepare
      const template = alarmed({ 'Fn::Sub': '${AWS::StackName}-other' });

      // Act
      const result = audit(template);

      // Assess
      expect(item(result, 'Tenang-O3-QueueAge').status).toBe('fail');
      expect(item(result, 'Tenang-O3-QueueAge').why).toContain('has no ApproximateAgeOfOldestMessage alarm');
    });

    it('when the QueueName dimension is !Ref Queue (its URL), O3-QueueAge fails naming !GetAtt Queue.QueueName', () => {
      // Prepare
      const template = alarmed({ Ref: 'Queue' });

      // Act
      const result = audit(template);

      // Assess
      const o3 = item(result, 'Tenang-O3-QueueAge');
      expect(o3.status).toBe('fail');
      expect(o3.why).toContain("QueueName dimension is the queue's URL");
      expect(o3.why).toContain('use !GetAtt Queue.QueueName');
    });

    it('when the alarm has no AlarmActions, O3-QueueAge fails: nobody is paged', () => {
      // Prepare
      const template = alarmed({ 'Fn::GetAtt': ['Queue', 'QueueName'] }, { AlarmActions: undefined });

      // Act
      const result = audit(template);

      // Assess
      const o3 = item(result, 'Tenang-O3-QueueAge');
      expect(o3.status).toBe('fail');
      expect(o3.why).toContain('no AlarmActions');
    });

    it.each([
      ['with AlarmActions', 'pass', { AlarmActions: [{ Ref: 'Topic' }] }],
      ['without AlarmActions', 'fail', {}],
    ])(
      'when an alarm without actions is named by a composite alarm %s, O3-QueueAge says %s',
      (_name, status, actions) => {
        // Prepare
        const template = alarmed(
          { 'Fn::GetAtt': ['Queue', 'QueueName'] },
          { AlarmActions: undefined },
          {
            Page: {
              Type: 'AWS::CloudWatch::CompositeAlarm',
              Properties: {
                AlarmRule: { 'Fn::Sub': 'ALARM(${QueueAgeAlarm.Arn})' },
                ...actions,
              },
            },
          },
        );

        // Act
        const result = audit(template);

        // Assess
        expect(item(result, 'Tenang-O3-QueueAge').status).toBe(status);
      },
    );
  });

  describe('a queue imported from another stack', () => {
    it('when the source queue is an Fn::ImportValue no given stack exports, D2, R3 and O3-QueueAge are not-checkable', () => {
      // Prepare
      const template = {
        Resources: queueConsumer({
          mapping: { EventSourceArn: { 'Fn::ImportValue': 'jobs-queue-arn' } },
        }),
      };

      // Act
      const result = audit(template);

      // Assess
      for (const rule of ['Tenang-D2', 'Tenang-R3', 'Tenang-O3-QueueAge']) {
        const judged = item(result, rule);
        expect(judged.status).toBe('not-checkable');
        expect(judged.why).toContain('jobs-queue-arn');
        expect(result.findings).toContainEqual(
          expect.objectContaining({ ruleId: rule, status: 'not-checkable', resource: 'Mapping' }),
        );
      }
    });
  });

  describe('a DLQ found by usage', () => {
    /** A redrive-less queue whose consumer names JOBS_DLQ_URL; `grant` lets its role send there. */
    function selfDeadLettering(grant: boolean): Record<string, unknown> {
      return {
        Resources: queueConsumer({
          fn: {
            Role: { 'Fn::GetAtt': ['ConsumerRole', 'Arn'] },
            Environment: { Variables: { JOBS_DLQ_URL: { Ref: 'Parked' } } },
          },
          extra: {
            Parked: { Type: 'AWS::SQS::Queue' },
            ConsumerRole: {
              Type: 'AWS::IAM::Role',
              Properties: {
                AssumeRolePolicyDocument: {},
                Policies: grant
                  ? [
                      {
                        PolicyName: 'send',
                        PolicyDocument: {
                          Statement: [
                            {
                              Effect: 'Allow',
                              Action: 'sqs:SendMessage',
                              Resource: { 'Fn::GetAtt': ['Parked', 'Arn'] },
                            },
                          ],
                        },
                      },
                    ]
                  : [],
              },
            },
          },
        }),
      };
    }

    it('when the consumer names a …_DLQ_URL queue it may send to, R3 passes and the queue is a DLQ for O3', () => {
      // Prepare
      const template = selfDeadLettering(true);

      // Act
      const result = audit(template);

      // Assess
      const r3 = item(result, 'Tenang-R3');
      expect(r3.status).toBe('pass');
      expect(r3.why).toContain('Consumer dead-letters to Parked (JOBS_DLQ_URL)');
      expect(item(result, 'Tenang-O3-DlqDepth').resources).toEqual(['Parked']);
    });

    it('when the consumer names a …_DLQ_URL queue it may not send to, R3 fails', () => {
      // Prepare
      const template = selfDeadLettering(false);

      // Act
      const result = audit(template);

      // Assess
      const r3 = item(result, 'Tenang-R3');
      expect(r3.status).toBe('fail');
      expect(r3.why).toContain('no redrive policy');
    });
  });

  describe('TTL tables found by usage', () => {
    /** A table with a neutral name, handed to a function as `variable`. */
    function usedTable(variable: string, ttl: boolean): Record<string, unknown> {
      return {
        Resources: {
          Records: {
            Type: 'AWS::DynamoDB::Table',
            Properties: {
              KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
              ...(ttl ? { TimeToLiveSpecification: { Enabled: true, AttributeName: 'expiresAt' } } : {}),
            },
          },
          Worker: {
            Type: 'AWS::Lambda::Function',
            Properties: { Environment: { Variables: { [variable]: { Ref: 'Records' } } } },
          },
        },
      };
    }

    it.each([
      ['IDEMPOTENCY_TABLE', 'Tenang-I1'],
      ['DEDUP_TABLE_NAME', 'Tenang-I1'],
      ['LOCK_TABLE', 'Tenang-L1'],
    ])('when a function receives a TTL-less table as %s, %s fails naming the variable', (variable, rule) => {
      // Prepare
      const template = usedTable(variable, false);

      // Act
      const result = audit(template);

      // Assess
      const judged = item(result, rule);
      expect(judged.status).toBe('fail');
      expect(judged.resources).toEqual(['Records']);
      expect(judged.why).toContain(variable);
    });

    it('when the table received as IDEMPOTENCY_TABLE has TTL, I1 passes', () => {
      // Prepare
      const template = usedTable('IDEMPOTENCY_TABLE', true);

      // Act
      const result = audit(template);

      // Assess
      expect(item(result, 'Tenang-I1').status).toBe('pass');
    });

    it('when a function receives a TTL-less table under a neutral name, I1 and L1 do not apply', () => {
      // Prepare
      const template = usedTable('ORDERS_TABLE', false);

      // Act
      const result = audit(template);

      // Assess
      expect(item(result, 'Tenang-I1').status).toBe('not-applicable');
      expect(item(result, 'Tenang-L1').status).toBe('not-applicable');
    });
  });

  describe('D4 on consumers only', () => {
    const producer = { Producer: { Type: 'AWS::Lambda::Function', Properties: { Handler: 'p.handler' } } };

    it('when only a producer lacks Timeout and MemorySize, D4 passes', () => {
      // Prepare
      const template = { Resources: queueConsumer({ extra: producer }) };

      // Act
      const result = audit(template);

      // Assess
      const d4 = item(result, 'Tenang-D4');
      expect(d4.status).toBe('pass');
      expect(d4.resources).toEqual(['Consumer']);
    });

    it('when the consumer lacks Timeout, D4 fails on it and not on the producer', () => {
      // Prepare
      const template = {
        Resources: queueConsumer({ fn: { Timeout: undefined, MemorySize: 256 }, extra: producer }),
      };

      // Act
      const result = audit(template);

      // Assess
      const d4 = item(result, 'Tenang-D4');
      expect(d4.status).toBe('fail');
      expect(d4.resources).toEqual(['Consumer']);
      expect(d4.why).toContain('no Timeout');
    });
  });
});
