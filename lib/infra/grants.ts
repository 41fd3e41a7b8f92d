/**
 * Least-privilege grants: exactly the actions a function's code calls, instead of CDK's broad
 * `grantReadWriteData` (which adds BatchGetItem, Query, Scan, BatchWriteItem, DescribeTable and
 * the table's stream reads), `grantSendMessages` (which adds GetQueueAttributes and GetQueueUrl)
 * and `grantRead` of a parameter (which adds DescribeParameters, GetParameters and
 * GetParameterHistory). What a full test run used of every grant is shown by `npm run iam-report`
 * (bench/IAM.md): the local platform enforces IAM, so a grant cut too short fails the tests.
 */
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as ssm from 'aws-cdk-lib/aws-ssm';
import type { TableAction } from '../config';

/** DynamoDB item actions a function may be granted on a table. */
export type ItemAction = TableAction;

/** Grants `actions` on `table` (TransactWriteItems is authorized as its items' actions, so it needs no action of its own). */
export function grantItems(
  table: dynamodb.ITable,
  grantee: iam.IGrantable,
  actions: readonly ItemAction[],
): iam.Grant {
  return table.grant(grantee, ...actions.map((a) => `dynamodb:${a}`));
}

/** Grants SendMessage (SendMessageBatch is authorized as SendMessage) on `queue`. */
export function grantSend(queue: sqs.IQueue, grantee: iam.IGrantable): iam.Grant {
  return queue.grant(grantee, 'sqs:SendMessage');
}

/** Grants reading `parameter` with the one API the reader calls. */
export function grantParameterRead(
  parameter: ssm.IParameter,
  grantee: iam.IGrantable,
  action: 'ssm:GetParameter' | 'ssm:GetParameters',
): iam.Grant {
  return iam.Grant.addToPrincipal({ grantee, actions: [action], resourceArns: [parameter.parameterArn] });
}
