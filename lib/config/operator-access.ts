/**
 * What each `tenang` command a runbook names touches, and how the operator's machine reaches it
 * on AWS with nothing but AWS credentials (P2: a runbook step that cannot reach its target is no
 * step). One table: test/unit/ops/operator-access.test.ts keeps it complete against the runbooks'
 * commands, and the deploy-readiness rule Tenang-F6-OperatorReach (lib/audit/operator-reach.ts)
 * checks, on the synthesized template, that a command whose target sits in a VPC has its way in.
 *
 * Network paths:
 * - `aws-api`: the service's public regional endpoint, signed with the operator's credentials
 *   (SQS, SSM, DynamoDB, Lambda's control plane, CloudWatch, CloudFormation);
 * - `via-function`: the target is inside a VPC that admits only its clients' security group (the
 *   cache: isolated subnets, no NAT, nothing routed in), so the command invokes a function of the
 *   stack placed there (Lambda Invoke is itself an `aws-api` call) and the function does the work;
 * - `none`: the command reads or computes locally and calls nothing.
 *
 * Every command also reads the pipeline declaration from the stack's template
 * (cloudformation:GetTemplate) unless TENANG_PIPELINE gives it: CONFIG_ACTIONS.
 */
import { CACHE_ADMIN_SERVICE } from './metrics';

/** How a command's target is reached from the operator's machine. */
export type OperatorNetworkPath =
  | { readonly kind: 'aws-api' }
  | { readonly kind: 'none' }
  | {
      readonly kind: 'via-function';
      /** The function's Powertools service name (its deployed name is `<stack>-<service>`). */
      readonly service: string;
      /** What sits in the VPC: the function must be admitted by its security group. */
      readonly target: 'cache';
    };

/** One command: what it touches and how. */
export interface OperatorCommandAccess {
  /** The command path without `tenang`, e.g. `cache invalidate`. */
  readonly command: string;
  /** What it acts on, in words (services and resources of the stage). */
  readonly touches: readonly string[];
  /** The IAM actions the operator's credentials need (besides CONFIG_ACTIONS). */
  readonly actions: readonly string[];
  readonly network: OperatorNetworkPath;
}

/** What every command needs to read the declaration from the deployed stack. */
export const CONFIG_ACTIONS: readonly string[] = ['cloudformation:GetTemplate'];

/** Resource discovery: the stack's queues, tables and mappings (pipeline-resources.ts). */
const DISCOVERY = [
  'cloudformation:ListStackResources',
  'sqs:GetQueueUrl',
  'lambda:GetEventSourceMapping',
] as const;

const API = { kind: 'aws-api' } as const;

/** Every command path a runbook names (and the other operator commands), with its reach. */
export const OPERATOR_COMMANDS: readonly OperatorCommandAccess[] = [
  {
    command: 'status',
    touches: [
      'CloudFormation stack resources',
      'SQS queue attributes (queues, DLQs, on-failure, side queues)',
      'Lambda event source mappings',
      'SSM pause and degrade flags',
      'DynamoDB DescribeTable (stream of the table)',
      'CloudWatch alarms and metric statistics',
    ],
    actions: [
      ...DISCOVERY,
      'sqs:GetQueueAttributes',
      'ssm:GetParameters',
      'dynamodb:DescribeTable',
      'cloudwatch:DescribeAlarms',
      'cloudwatch:GetMetricStatistics',
    ],
    network: API,
  },
  {
    command: 'pause',
    touches: ['SSM pause flag of the consumer', "the consumer's Lambda event source mapping"],
    actions: [...DISCOVERY, 'ssm:GetParameter', 'ssm:PutParameter', 'lambda:UpdateEventSourceMapping'],
    network: API,
  },
  {
    command: 'resume',
    touches: ['SSM pause flag of the consumer', "the consumer's Lambda event source mapping"],
    actions: [...DISCOVERY, 'ssm:GetParameter', 'ssm:PutParameter', 'lambda:UpdateEventSourceMapping'],
    network: API,
  },
  {
    command: 'degrade',
    touches: ['SSM degrade flag of the stage'],
    actions: ['ssm:PutParameter'],
    network: API,
  },
  {
    command: 'dlq list',
    touches: ["a job type's DLQ or a stream consumer's on-failure queue (received, then made visible again)"],
    actions: [...DISCOVERY, 'sqs:ReceiveMessage', 'sqs:ChangeMessageVisibility'],
    network: API,
  },
  {
    command: 'dlq replay',
    touches: [
      'job type: its DLQ and queue (SQS), the tables its effect check reads (DynamoDB GetItem)',
      "stream consumer: its on-failure queue (SQS), the table's stream (DynamoDB Streams), Lambda Invoke of the consumer",
    ],
    actions: [
      ...DISCOVERY,
      'sqs:ReceiveMessage',
      'sqs:ChangeMessageVisibility',
      'sqs:SendMessage',
      'sqs:DeleteMessage',
      'dynamodb:GetItem',
      'dynamodb:GetShardIterator',
      'dynamodb:GetRecords',
      'lambda:InvokeFunction',
    ],
    network: API,
  },
  {
    command: 'lock list',
    touches: ['DynamoDB locks table (Scan)'],
    actions: [...DISCOVERY, 'dynamodb:Scan'],
    network: API,
  },
  {
    command: 'lock release',
    touches: ['DynamoDB locks table (GetItem, conditional UpdateItem)'],
    actions: [...DISCOVERY, 'dynamodb:GetItem', 'dynamodb:UpdateItem'],
    network: API,
  },
  {
    command: 'cache invalidate',
    touches: [
      'the Valkey cache in its VPC (through the cache-admin function)',
      "the cached entities' table (GetItem, by the function)",
      '--bump-version: nothing (a plan printed locally)',
    ],
    actions: ['lambda:InvokeFunction'],
    network: { kind: 'via-function', service: CACHE_ADMIN_SERVICE, target: 'cache' },
  },
  {
    command: 'cache flush',
    touches: [
      'the Valkey cache in its VPC (through the cache-admin function)',
      "the cached entities' table for the hot keys (GetItem, by the function)",
    ],
    actions: ['lambda:InvokeFunction'],
    network: { kind: 'via-function', service: CACHE_ADMIN_SERVICE, target: 'cache' },
  },
  {
    command: 'audit',
    touches: [
      'a template file: nothing remote',
      '--live: CloudFormation template, SQS attributes, Lambda configuration and mappings, CloudWatch alarms, DynamoDB TTL',
    ],
    actions: [
      'cloudformation:GetTemplate',
      'sqs:GetQueueUrl',
      'sqs:GetQueueAttributes',
      'lambda:GetFunctionConfiguration',
      'lambda:ListEventSourceMappings',
      'lambda:GetEventSourceMapping',
      'cloudwatch:DescribeAlarms',
      'dynamodb:DescribeTimeToLive',
    ],
    network: API,
  },
  {
    command: 'drill',
    touches: ['a local platform of its own (moto and Redis on this machine); never the account'],
    actions: [],
    network: { kind: 'none' },
  },
];

/** The entry of `command` (a path such as `cache invalidate`), or undefined. */
export function operatorAccess(command: string): OperatorCommandAccess | undefined {
  return OPERATOR_COMMANDS.find((c) => c.command === command);
}
