import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { PipelineConfigError } from '../../lib/config';
import { PipelineStack } from '../../lib/infra/pipeline-stack';
import { targetTraits } from '../../lib/infra/target';
import { jobTypeInput, pipelineInput, streamConsumerInput } from '../unit/config/builders';
import {
  actionsAllowedOn,
  actionsOf,
  getAtt,
  logicalId,
  propertiesOf,
  ref,
  REGION,
  resourcesOf,
  roleIdOf,
  statementsOfRole,
  toText,
} from './helpers';

const REPO = path.join(__dirname, '..', '..');

/** An app of its own: a table with a sort key and TTL, one job type, one stream consumer on its own table. */
function appStack(): { stack: PipelineStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new PipelineStack(app, 'tenang-test', {
    pipeline: pipelineInput({
      tables: [
        {
          name: 'shipments',
          partitionKey: 'shipmentId',
          sortKey: 'step',
          ttl: 'expiresAt',
          stream: 'NEW_IMAGE',
        },
        { name: 'orders', partitionKey: 'orderId', stream: 'NEW_AND_OLD_IMAGES' },
      ],
      jobTypes: [
        jobTypeInput({
          entry: 'lambdas/flag-reconciler/index.ts',
          // Not idempotent under the runner: this test is about tables, not Powertools records.
          idempotent: false,
          resources: { tables: { shipments: ['GetItem', 'UpdateItem'] } },
        }),
      ],
      streamConsumers: [
        streamConsumerInput({
          consumer: 'shipment-relay',
          table: 'shipments',
          entry: 'examples/reference/functions/outbox-relay.ts',
          resources: { tables: { orders: ['PutItem'] }, queues: ['order.ship'], degradeFlag: true },
        }),
      ],
    }),
    appDir: REPO,
    traits: targetTraits(app),
    env: { region: REGION },
  });
  return { stack, template: Template.fromStack(stack) };
}

describe('Class: PipelineStack', () => {
  describe('Declared tables and stream consumers', () => {
    const { stack, template } = appStack();
    const shipments = stack.tables.byName('shipments');
    const relay = stack.streamConsumer('shipment-relay').consumer.function;

    it('when an app declares a table, it is created with its keys, TTL, stream and tenang defaults', () => {
      // Assess
      expect(propertiesOf(template, shipments)).toMatchObject({
        TableName: 'tenang-test-shipments',
        KeySchema: [
          { AttributeName: 'shipmentId', KeyType: 'HASH' },
          { AttributeName: 'step', KeyType: 'RANGE' },
        ],
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
        StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
        BillingMode: 'PAY_PER_REQUEST',
        SSESpecification: { SSEEnabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      });
      template.hasResource('AWS::DynamoDB::Table', {
        Properties: { TableName: 'tenang-test-shipments' },
        DeletionPolicy: 'RetainExceptOnCreate',
      });
      // tenang's idempotency table comes with every pipeline.
      template.hasResourceProperties('AWS::DynamoDB::Table', { TableName: 'tenang-test-idempotency' });
      template.resourceCountIs('AWS::DynamoDB::Table', 3);
    });

    it('when a stream consumer declares its resources, it gets their variables and exactly their grants', () => {
      // Prepare
      const queue = stack.workerQueue('order.ship').queue;
      const orders = stack.tables.byName('orders');

      // Assess
      expect(propertiesOf(template, relay)).toMatchObject({
        Environment: {
          Variables: {
            ORDERS_TABLE: ref(orders),
            ORDER_SHIP_QUEUE_URL: ref(queue),
            DEGRADE_FLAG: '/tenang/test/flags/degrade',
          },
        },
      });
      expect(actionsAllowedOn(template, relay, getAtt(orders, 'Arn'))).toEqual(['dynamodb:PutItem']);
      expect(actionsAllowedOn(template, relay, getAtt(queue, 'Arn'))).toEqual(['sqs:SendMessage']);
      const flagReads = statementsOfRole(template, roleIdOf(relay)).filter((st) =>
        resourcesOf(st).some((r) =>
          toText(r).endsWith(`:parameter\${${logicalId(stack.controlFlags.degradeFlag)}}`),
        ),
      );
      expect(flagReads.flatMap(actionsOf)).toEqual(['ssm:GetParameter']);
      // Not in the cache's VPC: it does not use the cache.
      expect(propertiesOf(template, relay).VpcConfig).toBeUndefined();
    });

    it('when a stream consumer is declared on a table, its mapping reads that table stream', () => {
      // Assess
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: getAtt(shipments, 'StreamArn'),
        FunctionName: ref(relay),
      });
    });

    it('when a job type uses a declared table, its consumer gets the variable and exactly the actions', () => {
      // Prepare
      const consumer = stack.workerQueue('order.ship').consumer.function;

      // Assess
      expect(propertiesOf(template, consumer)).toMatchObject({
        Environment: { Variables: { SHIPMENTS_TABLE: ref(shipments) } },
      });
      expect(actionsAllowedOn(template, consumer, getAtt(shipments, 'Arn'))).toEqual([
        'dynamodb:GetItem',
        'dynamodb:UpdateItem',
      ]);
    });
  });

  it('when resources name a table nobody declared, synthesis fails naming it and the known tables', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });

    // Act
    let thrown: unknown;
    try {
      new PipelineStack(app, 'tenang-test', {
        pipeline: pipelineInput({
          jobTypes: [jobTypeInput({ resources: { tables: { invoices: ['GetItem'] } } })],
        }),
        traits: targetTraits(app),
      });
    } catch (error) {
      thrown = error;
    }

    // Assess
    expect(thrown).toBeInstanceOf(PipelineConfigError);
    expect((thrown as PipelineConfigError).problems).toEqual([
      'jobTypes[0].resources.tables: "invoices" is not a declared table (known: idempotency, orders)',
    ]);
  });
});
