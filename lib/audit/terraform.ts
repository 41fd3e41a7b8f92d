/**
 * Reads a Terraform configuration (a directory of `.tf` files, one file, or HCL text) or a
 * Terraform plan (`terraform show -json`) into the CloudFormation shape the template rules read,
 * so the same rules judge it: `aws_sqs_queue` becomes an `AWS::SQS::Queue` with VisibilityTimeout
 * from `visibility_timeout_seconds`, and so on. References between resources stay references
 * (`aws_sqs_queue.q.arn` → `Fn::GetAtt [q, Arn]`), so a rule follows a mapping to its queue and
 * function; what the input does not fix (a variable without a default, a data source, a remote
 * module's output, a plan value known only after apply) becomes an unknown value that makes the
 * rules reading it not-checkable, naming it.
 *
 * HCL is parsed by `@cdktf/hcl2json` (MPL-2.0, used unmodified). Its parser is Go compiled to
 * WebAssembly behind an asynchronous API; the audit reads its input synchronously, so the parse
 * runs in a child Node process (one per module directory), which also keeps the WebAssembly
 * runtime out of the audit's own process.
 *
 * Findings name resources by their Terraform address (`aws_sqs_queue.orders`,
 * `module.worker.aws_lambda_function.this`) and point at the `resource` block's file and line.
 * Not modelled, by design: `lifecycle` (Terraform has no rollback that F2-RetainOnCreate guards
 * against), `count` beyond one instance (a literal `for_each` is expanded), `dynamic` blocks.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LAMBDA_DEFAULT_TIMEOUT_SECONDS, UNKNOWN_VALUE_KEY, type TemplateVocabulary } from './rules';
import type { StackTemplate } from './template-audit';
import { TemplateFormatError } from './template-text';
import { Joined, ResourceRef, Unresolved, evaluateValue, type Scope, type TfValue } from './terraform-expr';

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The CloudFormation words the rules write in their other findings, in Terraform's
 * (template-audit.ts replaces them in each finding's text, longest first, as whole words).
 */
const TERRAFORM_WORDS: Readonly<Record<string, string>> = {
  // A module whose source is not a local path is read as a nested stack whose template is not given.
  'nested stack ': '',
  'its template was not given (audit the whole cdk.out, or the nested template with this one)':
    'its source is not a local path: the audit reads no registry or remote module (vendor it to audit it)',
  'FunctionResponseTypes [ReportBatchItemFailures] (SAM: on the event; CDK: reportBatchItemFailures: true)':
    'function_response_types = ["ReportBatchItemFailures"] on aws_lambda_event_source_mapping',
  FunctionResponseTypes: 'function_response_types',
  VisibilityTimeout: 'visibility_timeout_seconds',
  Timeout: 'timeout',
  MemorySize: 'memory_size',
  MaximumBatchingWindowInSeconds: 'maximum_batching_window_in_seconds',
  "RedrivePolicy { deadLetterTargetArn: <a DLQ's Arn>, maxReceiveCount: 2–20 }":
    'redrive_policy = jsonencode({ deadLetterTargetArn = aws_sqs_queue.<dlq>.arn, maxReceiveCount = 2–20 })',
  RedrivePolicy: 'redrive_policy',
  'BisectBatchOnFunctionError: true': 'bisect_batch_on_function_error = true',
  BisectBatchOnFunctionError: 'bisect_batch_on_function_error',
  MaximumRetryAttempts: 'maximum_retry_attempts',
  MaximumRecordAgeInSeconds: 'maximum_record_age_in_seconds',
  'DestinationConfig.OnFailure': 'destination_config { on_failure { destination_arn } }',
  DestinationConfig: 'destination_config',
  EventSourceArn: 'event_source_arn',
  RetentionPeriodHours: 'retention_period',
  'AWS::CloudWatch::Alarm': 'aws_cloudwatch_metric_alarm',
  'Dimensions QueueName = !GetAtt ': 'dimensions QueueName = ',
  AlarmActions: 'alarm_actions',
  ActionsEnabled: 'actions_enabled',
  AlarmDescription: 'alarm_description',
  '(!Ref ': '(',
  'use !GetAtt ': 'use ',
  '.QueueName': '.name',
  'TimeToLiveSpecification { Enabled: true, AttributeName: <the expiry attribute the code writes> }':
    'ttl { enabled = true, attribute_name = "<the expiry attribute the code writes>" }',
  'its template was not given, so the resources of nested stack':
    'its source is not a local path (the audit reads no registry or remote module), so the resources of',
  'not defined in this template': 'not defined in this configuration',
  'not in the template': 'not in the configuration',
  'the template does not fix': 'the configuration does not fix',
  'the template cannot': 'the configuration cannot',
  'no AWS::CloudWatch::Alarm in the template': 'no aws_cloudwatch_metric_alarm in the configuration',
  "CDK: queue.grantSendMessages(fn), or a role policy statement sqs:SendMessage on the queue's Arn":
    'an aws_iam_role_policy statement sqs:SendMessage on aws_sqs_queue.<name>.arn',
};

/** Terraform's defaults (the AWS provider's: Lambda's own), and the words findings use for it. */
export const TERRAFORM_VOCABULARY: TemplateVocabulary = {
  format: 'Terraform',
  defaultTimeoutSeconds: LAMBDA_DEFAULT_TIMEOUT_SECONDS,
  defaultMemoryMb: 128,
  defaultsOwner: "the AWS provider's",
  timeout: 'timeout',
  memorySize: 'memory_size',
  lowerTimeout: "lower the function's timeout",
  visibilityTimeout: 'visibility_timeout_seconds',
  batchingWindow: 'maximum_batching_window_in_seconds',
  partialBatchFix:
    'add function_response_types = ["ReportBatchItemFailures"] on aws_lambda_event_source_mapping',
  functionResponseTypes: 'function_response_types',
  bisect: 'bisect_batch_on_function_error = true',
  maximumRetryAttempts: 'maximum_retry_attempts',
  maximumRecordAge: 'maximum_record_age_in_seconds',
  onFailureFix: 'add destination_config { on_failure { destination_arn } } (an SQS queue or SNS topic)',
  words: TERRAFORM_WORDS,
};

// ---------------------------------------------------------------------------------------------
// Parsing HCL
// ---------------------------------------------------------------------------------------------

/** The child process's program: parses each file given on stdin, prints the results as JSON. */
const PARSER_PROGRAM = `
const { parse } = require(process.argv[1]);
let input = '';
process.stdin.on('data', (c) => (input += c));
process.stdin.on('end', async () => {
  const files = JSON.parse(input);
  const out = [];
  for (const f of files) {
    try { out.push({ json: await parse(f.name, f.text) }); }
    catch (e) { out.push({ error: e instanceof Error ? e.message : String(e) }); }
  }
  process.stdout.write(JSON.stringify(out));
  process.exit(0);
});
`;

/** Runs the parser over some files: each file's JSON, or the parser's error for it. */
function runParser(files: readonly { name: string; text: string }[]): ({ json: Json } | { error: string })[] {
  if (files.length === 0) return [];
  let parser: string;
  try {
    parser = require.resolve('@cdktf/hcl2json');
  } catch {
    throw new TemplateFormatError(
      'reading Terraform needs the @cdktf/hcl2json package, which is not installed',
    );
  }
  const result = spawnSync(process.execPath, ['-e', PARSER_PROGRAM, parser], {
    input: JSON.stringify(files),
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: 120_000,
  });
  if (result.status !== 0 || result.error !== undefined)
    throw new TemplateFormatError(
      `the HCL parser failed: ${result.error?.message ?? result.stderr.trim().split('\n').slice(-3).join(' ')}`,
    );
  return JSON.parse(result.stdout) as ({ json: Json } | { error: string })[];
}

/** Parses HCL files with @cdktf/hcl2json; a file that is not HCL is a TemplateFormatError naming it. */
export function parseHclFiles(files: readonly { name: string; text: string }[]): Json[] {
  return runParser(files).map((p, i) => {
    if ('error' in p)
      throw new TemplateFormatError(`${files[i]?.name ?? 'input'} is not Terraform HCL: ${p.error}`);
    return p.json;
  });
}

// ---------------------------------------------------------------------------------------------
// The model being built
// ---------------------------------------------------------------------------------------------

/** One resource instance read, before its mapping to CloudFormation. */
interface TfResource {
  readonly address: string;
  readonly type: string;
  /** Its attributes and blocks, evaluated (blocks as lists of objects, as in plan JSON). */
  readonly body: () => Record<string, TfValue>;
  readonly file?: string;
  readonly line?: number;
  /** A module call whose source is not read: its resources are unknown. */
  readonly remoteModule?: string;
}

/** The resources of a configuration and how to name them back. */
class Model {
  public readonly resources: TfResource[] = [];
  private readonly ids = new Map<string, string>();

  public add(resource: TfResource): void {
    this.resources.push(resource);
    this.ids.set(resource.address, `Tf${this.ids.size}${resource.address.replace(/[^A-Za-z0-9]/g, '')}`);
  }

  public idOf(address: string): string | undefined {
    return this.ids.get(address);
  }

  public typeOf(address: string): string | undefined {
    return this.resources.find((r) => r.address === address)?.type;
  }
}

/** The attribute of a Terraform resource type as a CloudFormation reference (`Ref` or `Fn::GetAtt`). */
function intrinsic(type: string | undefined, id: string, attribute: string): Json {
  const [first = 'id'] = attribute.split('.');
  const ref = { Ref: id };
  const getAtt = (name: string): Json => ({ 'Fn::GetAtt': [id, name] });
  switch (type) {
    case 'aws_sqs_queue':
      return first === 'arn' ? getAtt('Arn') : first === 'name' ? getAtt('QueueName') : ref;
    case 'aws_lambda_function':
      return first === 'function_name' || first === 'id' ? ref : getAtt('Arn');
    case 'aws_iam_role':
      return first === 'arn' ? getAtt('Arn') : ref;
    case 'aws_dynamodb_table':
      return first === 'stream_arn' ? getAtt('StreamArn') : first === 'arn' ? getAtt('Arn') : ref;
    case 'aws_kinesis_stream':
      return first === 'name' ? ref : getAtt('Arn');
    case 'aws_kinesis_stream_consumer':
      return getAtt('ConsumerARN');
    case 'aws_sns_topic':
      return first === 'name' ? getAtt('TopicName') : ref;
    case 'aws_iam_policy':
      return first === 'name' ? getAtt('PolicyName') : ref;
    default:
      return first === 'id' ? ref : getAtt(first === 'arn' ? 'Arn' : first);
  }
}

/** A value in CloudFormation's terms; unknowns become UNKNOWN_VALUE_KEY objects. */
function toCfn(model: Model, value: TfValue): unknown {
  if (value instanceof Unresolved) return { [UNKNOWN_VALUE_KEY]: value.why };
  if (value instanceof ResourceRef) {
    const id = model.idOf(value.address);
    if (id === undefined) return { [UNKNOWN_VALUE_KEY]: `${value.address} is not in the configuration` };
    return intrinsic(model.typeOf(value.address), id, value.attribute);
  }
  if (value instanceof Joined) {
    const text = value.parts
      .map((p) => {
        if (typeof p === 'string') return p.replace(/\$\{/g, '${!');
        const id = model.idOf(p.address);
        if (id === undefined) return `\${!${p.address}.${p.attribute}}`;
        const target = intrinsic(model.typeOf(p.address), id, p.attribute);
        const getAtt = target['Fn::GetAtt'];
        return Array.isArray(getAtt) ? `\${${getAtt.join('.')}}` : `\${${id}}`;
      })
      .join('');
    return { 'Fn::Sub': text };
  }
  if (Array.isArray(value)) return value.map((v: TfValue) => toCfn(model, v));
  if (isRecord(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toCfn(model, v as TfValue)]));
  return value;
}

// ---------------------------------------------------------------------------------------------
// Mapping resource types
// ---------------------------------------------------------------------------------------------

/** The first block of a nested block list (`environment { … }` is `[{ … }]`). */
function block(value: TfValue): Record<string, TfValue> | undefined {
  const first = Array.isArray(value) ? (value as TfValue[])[0] : value;
  return isRecord(first) ? (first as Record<string, TfValue>) : undefined;
}

/** Copies the attributes given into CloudFormation property names, skipping the unset ones. */
function pick(
  body: Record<string, TfValue>,
  names: Readonly<Record<string, string>>,
): Record<string, TfValue> {
  const out: Record<string, TfValue> = {};
  for (const [tf, cfn] of Object.entries(names))
    if (body[tf] !== undefined && body[tf] !== null) out[cfn] = body[tf];
  return out;
}

/** A policy given as JSON text (a heredoc already parsed, or text) or as jsonencode's object. */
function policyDocument(value: TfValue): TfValue {
  if (typeof value === 'string') {
    try {
      return JSON.parse(value) as TfValue;
    } catch {
      return value;
    }
  }
  return value;
}

const CFN_TYPES: Readonly<Record<string, string>> = {
  aws_sqs_queue: 'AWS::SQS::Queue',
  aws_lambda_function: 'AWS::Lambda::Function',
  aws_lambda_event_source_mapping: 'AWS::Lambda::EventSourceMapping',
  aws_cloudwatch_metric_alarm: 'AWS::CloudWatch::Alarm',
  aws_cloudwatch_composite_alarm: 'AWS::CloudWatch::CompositeAlarm',
  aws_dynamodb_table: 'AWS::DynamoDB::Table',
  aws_kinesis_stream: 'AWS::Kinesis::Stream',
  aws_kinesis_stream_consumer: 'AWS::Kinesis::StreamConsumer',
  aws_sns_topic: 'AWS::SNS::Topic',
  aws_sns_topic_subscription: 'AWS::SNS::Subscription',
  aws_sns_topic_policy: 'AWS::SNS::TopicPolicy',
  aws_iam_role: 'AWS::IAM::Role',
  aws_iam_role_policy: 'AWS::IAM::RolePolicy',
  aws_iam_policy: 'AWS::IAM::ManagedPolicy',
  aws_sqs_queue_policy: 'AWS::SQS::QueuePolicy',
  aws_kms_key: 'AWS::KMS::Key',
};

/** The CloudFormation properties of one resource, from its Terraform attributes. */
function properties(type: string, b: Record<string, TfValue>): Record<string, TfValue> {
  switch (type) {
    case 'aws_sqs_queue':
      return {
        ...pick(b, {
          name: 'QueueName',
          visibility_timeout_seconds: 'VisibilityTimeout',
          message_retention_seconds: 'MessageRetentionPeriod',
          fifo_queue: 'FifoQueue',
          delay_seconds: 'DelaySeconds',
          kms_master_key_id: 'KmsMasterKeyId',
          sqs_managed_sse_enabled: 'SqsManagedSseEnabled',
          receive_wait_time_seconds: 'ReceiveMessageWaitTimeSeconds',
        }),
        ...(b.redrive_policy === undefined ? {} : { RedrivePolicy: policyDocument(b.redrive_policy) }),
      };
    case 'aws_lambda_function': {
      const environment = block(b.environment);
      const dlq = block(b.dead_letter_config);
      return {
        ...pick(b, {
          function_name: 'FunctionName',
          timeout: 'Timeout',
          memory_size: 'MemorySize',
          role: 'Role',
          reserved_concurrent_executions: 'ReservedConcurrentExecutions',
          runtime: 'Runtime',
          handler: 'Handler',
        }),
        ...(environment?.variables === undefined
          ? {}
          : { Environment: { Variables: environment.variables } }),
        ...(dlq === undefined ? {} : { DeadLetterConfig: { TargetArn: dlq.target_arn } }),
      };
    }
    case 'aws_lambda_event_source_mapping': {
      const onFailure = block(block(b.destination_config)?.on_failure);
      const scaling = block(b.scaling_config);
      return {
        ...pick(b, {
          event_source_arn: 'EventSourceArn',
          function_name: 'FunctionName',
          batch_size: 'BatchSize',
          maximum_batching_window_in_seconds: 'MaximumBatchingWindowInSeconds',
          function_response_types: 'FunctionResponseTypes',
          maximum_retry_attempts: 'MaximumRetryAttempts',
          maximum_record_age_in_seconds: 'MaximumRecordAgeInSeconds',
          bisect_batch_on_function_error: 'BisectBatchOnFunctionError',
          starting_position: 'StartingPosition',
          parallelization_factor: 'ParallelizationFactor',
          enabled: 'Enabled',
        }),
        ...(onFailure?.destination_arn === undefined
          ? {}
          : { DestinationConfig: { OnFailure: { Destination: onFailure.destination_arn } } }),
        ...(scaling?.maximum_concurrency === undefined
          ? {}
          : { ScalingConfig: { MaximumConcurrency: scaling.maximum_concurrency } }),
      };
    }
    case 'aws_cloudwatch_metric_alarm': {
      const dimensions = (value: TfValue): TfValue =>
        isRecord(value)
          ? Object.entries(value).map(([Name, Value]) => ({ Name, Value: Value as TfValue }))
          : value;
      const queries = Array.isArray(b.metric_query) ? (b.metric_query as TfValue[]) : [];
      return {
        ...pick(b, {
          alarm_name: 'AlarmName',
          alarm_description: 'AlarmDescription',
          metric_name: 'MetricName',
          namespace: 'Namespace',
          threshold: 'Threshold',
          comparison_operator: 'ComparisonOperator',
          alarm_actions: 'AlarmActions',
          ok_actions: 'OKActions',
          insufficient_data_actions: 'InsufficientDataActions',
          actions_enabled: 'ActionsEnabled',
          statistic: 'Statistic',
          period: 'Period',
          evaluation_periods: 'EvaluationPeriods',
        }),
        ...(b.dimensions === undefined ? {} : { Dimensions: dimensions(b.dimensions) }),
        ...(queries.length === 0
          ? {}
          : {
              Metrics: queries.filter(isRecord).map((q) => {
                const query = q as Record<string, TfValue>;
                const metric = block(query.metric);
                return {
                  Id: query.id,
                  ...(query.expression === undefined ? {} : { Expression: query.expression }),
                  ...(query.return_data === undefined ? {} : { ReturnData: query.return_data }),
                  ...(metric === undefined
                    ? {}
                    : {
                        MetricStat: {
                          Metric: {
                            MetricName: metric.metric_name,
                            Namespace: metric.namespace,
                            Dimensions: dimensions(metric.dimensions),
                          },
                          Period: metric.period,
                          Stat: metric.stat,
                        },
                      }),
                };
              }),
            }),
      };
    }
    case 'aws_cloudwatch_composite_alarm':
      return pick(b, {
        alarm_name: 'AlarmName',
        alarm_description: 'AlarmDescription',
        alarm_rule: 'AlarmRule',
        alarm_actions: 'AlarmActions',
        actions_enabled: 'ActionsEnabled',
      });
    case 'aws_dynamodb_table': {
      const ttl = block(b.ttl);
      return {
        ...pick(b, { name: 'TableName' }),
        ...(ttl === undefined
          ? {}
          : {
              TimeToLiveSpecification: { Enabled: ttl.enabled ?? false, AttributeName: ttl.attribute_name },
            }),
        ...(b.stream_enabled === true ? { StreamSpecification: { StreamViewType: b.stream_view_type } } : {}),
      };
    }
    case 'aws_kinesis_stream':
      return pick(b, { name: 'Name', retention_period: 'RetentionPeriodHours', shard_count: 'ShardCount' });
    case 'aws_kinesis_stream_consumer':
      return pick(b, { name: 'ConsumerName', stream_arn: 'StreamARN' });
    case 'aws_sns_topic':
      return pick(b, { name: 'TopicName', kms_master_key_id: 'KmsMasterKeyId' });
    case 'aws_sns_topic_subscription':
      return pick(b, { topic_arn: 'TopicArn', protocol: 'Protocol', endpoint: 'Endpoint' });
    case 'aws_sns_topic_policy':
      return { Topics: [b.arn], PolicyDocument: policyDocument(b.policy) };
    case 'aws_iam_role': {
      const inline = Array.isArray(b.inline_policy) ? (b.inline_policy as TfValue[]) : [];
      return {
        ...pick(b, { name: 'RoleName', managed_policy_arns: 'ManagedPolicyArns' }),
        ...(b.assume_role_policy === undefined
          ? {}
          : { AssumeRolePolicyDocument: policyDocument(b.assume_role_policy) }),
        ...(inline.length === 0
          ? {}
          : {
              Policies: inline.filter(isRecord).map((p) => ({
                PolicyName: (p as Record<string, TfValue>).name,
                PolicyDocument: policyDocument((p as Record<string, TfValue>).policy),
              })),
            }),
      };
    }
    case 'aws_iam_role_policy':
      return { PolicyName: b.name, RoleName: b.role, PolicyDocument: policyDocument(b.policy) };
    case 'aws_iam_policy':
      return { ...pick(b, { name: 'ManagedPolicyName' }), PolicyDocument: policyDocument(b.policy) };
    case 'aws_sqs_queue_policy':
      return { Queues: [b.queue_url], PolicyDocument: policyDocument(b.policy) };
    case 'aws_kms_key':
      return b.policy === undefined ? {} : { KeyPolicy: policyDocument(b.policy) };
    default:
      return {};
  }
}

/** The CloudFormation-shaped template of a configuration's resources, with where each came from. */
function toStackTemplate(model: Model, name: string, file: string | undefined): StackTemplate {
  const resources: Record<string, Json> = {};
  const where = new Map<string, { display: string; file?: string; line?: number }>();
  const bodies = new Map(
    model.resources.map((r) => [r.address, r.remoteModule === undefined ? r.body() : {}]),
  );
  // Attachments put on their role, redrive policies on their queue, after every resource is known.
  const extraPolicyArns = new Map<string, TfValue[]>();
  const redrives = new Map<string, TfValue>();
  for (const r of model.resources) {
    const b = bodies.get(r.address) ?? {};
    if (r.type === 'aws_iam_role_policy_attachment' && b.role instanceof ResourceRef)
      extraPolicyArns.set(b.role.address, [...(extraPolicyArns.get(b.role.address) ?? []), b.policy_arn]);
    if (r.type === 'aws_iam_policy_attachment' && Array.isArray(b.roles))
      for (const role of b.roles as TfValue[])
        if (role instanceof ResourceRef)
          extraPolicyArns.set(role.address, [...(extraPolicyArns.get(role.address) ?? []), b.policy_arn]);
    if (r.type === 'aws_sqs_queue_redrive_policy' && b.queue_url instanceof ResourceRef)
      redrives.set(b.queue_url.address, policyDocument(b.redrive_policy ?? null));
  }
  for (const r of model.resources) {
    const id = model.idOf(r.address) ?? r.address;
    where.set(id, {
      display: r.address,
      ...(r.file === undefined ? {} : { file: r.file }),
      ...(r.line === undefined ? {} : { line: r.line }),
    });
    if (r.remoteModule !== undefined) {
      // As a nested stack whose template was not given: every rule is not-checkable for it.
      resources[id] = { Type: 'AWS::CloudFormation::Stack', Properties: { TemplateURL: r.remoteModule } };
      continue;
    }
    const b = bodies.get(r.address) ?? {};
    const props = properties(r.type, b);
    const arns = extraPolicyArns.get(r.address);
    if (arns !== undefined)
      props.ManagedPolicyArns = [
        ...(Array.isArray(props.ManagedPolicyArns) ? (props.ManagedPolicyArns as TfValue[]) : []),
        ...arns,
      ];
    const redrive = redrives.get(r.address);
    if (redrive !== undefined && props.RedrivePolicy === undefined) props.RedrivePolicy = redrive;
    resources[id] = {
      Type: CFN_TYPES[r.type] ?? `Terraform::${r.type}`,
      Properties: toCfn(model, props) as Json,
    };
  }
  return {
    name,
    ...(file === undefined ? {} : { file }),
    template: { Resources: resources },
    locate: (id) => where.get(id),
    vocabulary: TERRAFORM_VOCABULARY,
  };
}

// ---------------------------------------------------------------------------------------------
// HCL configurations
// ---------------------------------------------------------------------------------------------

/** A module's files, parsed. */
interface ModuleFiles {
  readonly directory: string;
  readonly files: readonly { readonly file: string; readonly text: string; readonly json: Json }[];
}

/** The .tf files of a directory, sorted. */
function tfFiles(directory: string): string[] {
  return fs
    .readdirSync(directory)
    .filter((f) => f.endsWith('.tf') && fs.statSync(path.join(directory, f)).isFile())
    .sort()
    .map((f) => path.join(directory, f));
}

/**
 * Parses every .tf file under a directory (its local modules' usually) in one parser run, since
 * each run pays for loading the parser; `.terraform/` (downloaded modules) is skipped.
 */
function parseTree(directory: string): Map<string, Json> {
  const files: string[] = [];
  const walk = (dir: string, depth: number): void => {
    if (depth > 8) return;
    files.push(...tfFiles(dir));
    for (const d of fs.readdirSync(dir, { withFileTypes: true }))
      if (d.isDirectory() && !d.name.startsWith('.') && d.name !== 'node_modules')
        walk(path.join(dir, d.name), depth + 1);
  };
  walk(directory, 0);
  const parsed = runParser(files.map((name) => ({ name, text: fs.readFileSync(name, 'utf8') })));
  // A file that does not parse is left out: parsed again (and refused) only if a module reads it.
  return new Map(
    files.flatMap((f, i) => {
      const p = parsed[i];
      return p !== undefined && 'json' in p ? [[f, p.json] as const] : [];
    }),
  );
}

function readModuleDirectory(directory: string, parsed: ReadonlyMap<string, Json> = new Map()): ModuleFiles {
  const names = tfFiles(directory);
  if (names.length === 0) throw new TemplateFormatError(`${directory} holds no .tf file`);
  const missing = names.filter((f) => !parsed.has(f));
  const more = parseHclFiles(missing.map((name) => ({ name, text: fs.readFileSync(name, 'utf8') })));
  return {
    directory,
    files: names.map((file) => ({
      file,
      text: fs.readFileSync(file, 'utf8'),
      json: parsed.get(file) ?? more[missing.indexOf(file)] ?? {},
    })),
  };
}

/** Every `<kind> "<name>" { … }` block of a module's files (hcl2json gives each as a one-element list). */
function blocksOf(
  files: ModuleFiles,
  kind: string,
): { name: string; body: Json; file: string; text: string }[] {
  return files.files.flatMap((f) => {
    const section = f.json[kind];
    if (!isRecord(section)) return [];
    return Object.entries(section).flatMap(([name, list]) =>
      (Array.isArray(list) ? list : [list])
        .filter(isRecord)
        .map((body) => ({ name, body, file: f.file, text: f.text })),
    );
  });
}

/** The 1-based line of `resource "<type>" "<name>"` (or `module "<name>"`) in a file's text. */
function lineOf(text: string, header: RegExp): number | undefined {
  const match = header.exec(text);
  return match === null ? undefined : text.slice(0, match.index).split('\n').length;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Reads one module into the model: its resources, its module calls (local ones recursively). */
function readModule(
  model: Model,
  files: ModuleFiles,
  prefix: string,
  inputs: ReadonlyMap<string, () => TfValue>,
  parsed: ReadonlyMap<string, Json>,
  depth = 0,
): { output: (name: string) => TfValue } {
  if (depth > 16) throw new TemplateFormatError(`${files.directory}: modules nest deeper than 16 levels`);
  const variables = new Map(blocksOf(files, 'variable').map((v) => [v.name, v.body]));
  const localSources = new Map<string, unknown>();
  for (const f of files.files)
    for (const l of Array.isArray(f.json.locals) ? f.json.locals : [f.json.locals])
      if (isRecord(l)) for (const [k, v] of Object.entries(l)) localSources.set(k, v);
  const localValues = new Map<string, TfValue>();
  const evaluating = new Set<string>();
  const instances = new Map<string, { key: TfValue; address: string }[]>();
  const modules = new Map<string, { output: (name: string) => TfValue }>();
  const calls = new Map(blocksOf(files, 'module').map((m) => [m.name, m]));

  const scopeWith = (iteration?: Scope['iteration']): Scope => ({
    directory: files.directory,
    iteration,
    variable: (name) => {
      const given = inputs.get(name);
      if (given !== undefined) return given();
      const declared = variables.get(name);
      if (declared === undefined) return new Unresolved(`var.${name} is not declared`);
      if (!('default' in declared) || declared.default === null)
        return new Unresolved(`var.${name} has no default, so its value is only known when it is given`);
      return evaluateValue(declared.default, base);
    },
    local: (name) => {
      if (localValues.has(name)) return localValues.get(name);
      if (!localSources.has(name)) return new Unresolved(`local.${name} is not defined`);
      if (evaluating.has(name)) return new Unresolved(`local.${name} refers to itself`);
      evaluating.add(name);
      const value = evaluateValue(localSources.get(name), base);
      evaluating.delete(name);
      localValues.set(name, value);
      return value;
    },
    resource: (type, name, key) => {
      const found = instances.get(`${type}.${name}`);
      if (found === undefined) return undefined;
      return (found.find((i) => key !== undefined && i.key === key) ?? found[0])?.address;
    },
    moduleOutput: (name, output) => {
      const called = modules.get(name);
      if (called !== undefined) return called.output(output);
      const call = calls.get(name);
      return new Unresolved(
        call === undefined
          ? `module.${name} is not called`
          : `${prefix}module.${name}.${output} comes from module source "${String(call.body.source)}", which is not read`,
      );
    },
  });
  const base = scopeWith();

  // Instances first (references between resources need every address), bodies evaluated later.
  // A `resource` section is { <type>: { <name>: [body] } }: blocksOf gives each type's names.
  for (const { name: type, body: byName, file, text } of blocksOf(files, 'resource')) {
    for (const [name, list] of Object.entries(byName)) {
      const body = (Array.isArray(list) ? list : [list]).find(isRecord);
      if (body === undefined) continue;
      const line = lineOf(
        text,
        new RegExp(`^[ \\t]*resource\\s+"${escapeRegExp(type)}"\\s+"${escapeRegExp(name)}"`, 'm'),
      );
      const count = body.count === undefined ? undefined : evaluateValue(body.count, base);
      const forEach = body.for_each === undefined ? undefined : evaluateValue(body.for_each, base);
      let keys: { key: TfValue; value: TfValue; suffix: string; index?: number }[];
      if (count !== undefined) {
        if (count === 0) continue;
        // One instance stands for all: the rules judge a resource's configuration, the same for each.
        keys = [{ key: 0, value: undefined, suffix: '[0]', index: 0 }];
      } else if (
        forEach !== undefined &&
        (Array.isArray(forEach) || isRecord(forEach)) &&
        !(forEach instanceof Joined)
      ) {
        const entries: [string, TfValue][] = Array.isArray(forEach)
          ? (forEach as TfValue[]).map((v) => [String(v), v])
          : Object.entries(forEach as Record<string, TfValue>);
        keys = entries.map(([k, v]) => ({ key: k, value: v, suffix: `["${k}"]` }));
      } else if (forEach !== undefined) {
        keys = [
          {
            key: new Unresolved(`the for_each of ${prefix}${type}.${name} is known only after apply`),
            value: undefined,
            suffix: '',
          },
        ];
      } else keys = [{ key: undefined, value: undefined, suffix: '' }];
      for (const k of keys) {
        const address = `${prefix}${type}.${name}${k.suffix}`;
        instances.set(`${type}.${name}`, [
          ...(instances.get(`${type}.${name}`) ?? []),
          { key: k.key, address },
        ]);
        const scope = scopeWith(
          count !== undefined
            ? { index: 0 }
            : forEach !== undefined
              ? { key: k.key, value: k.value }
              : undefined,
        );
        const { count: _c, for_each: _f, lifecycle: _l, depends_on: _d, provider: _p, ...attributes } = body;
        let memo: Record<string, TfValue> | undefined;
        model.add({
          address,
          type,
          file,
          ...(line === undefined ? {} : { line }),
          body: () => (memo ??= evaluateValue(attributes, scope) as Record<string, TfValue>),
        });
      }
    }
  }

  for (const [name, call] of calls) {
    const source = typeof call.body.source === 'string' ? call.body.source : '';
    const line = lineOf(call.text, new RegExp(`^[ \\t]*module\\s+"${escapeRegExp(name)}"`, 'm'));
    if (source.startsWith('./') || source.startsWith('../')) {
      const directory = path.resolve(files.directory, source);
      const {
        source: _s,
        version: _v,
        providers: _p,
        count: _c,
        for_each: _f,
        depends_on: _d,
        ...args
      } = call.body;
      const childInputs = new Map(
        Object.entries(args).map(([k, v]) => [k, () => evaluateValue(v, base)] as const),
      );
      modules.set(
        name,
        readModule(
          model,
          readModuleDirectory(directory, parsed),
          `${prefix}module.${name}.`,
          childInputs,
          parsed,
          depth + 1,
        ),
      );
    } else {
      model.add({
        address: `${prefix}module.${name}`,
        type: 'module',
        file: call.file,
        ...(line === undefined ? {} : { line }),
        body: () => ({}),
        remoteModule: source,
      });
    }
  }

  const outputs = new Map(blocksOf(files, 'output').map((o) => [o.name, o.body.value]));
  return {
    output: (name) =>
      outputs.has(name)
        ? evaluateValue(outputs.get(name), base)
        : new Unresolved(`${prefix.replace(/\.$/, '')} has no output ${name}`),
  };
}

/** Reads a Terraform configuration: a directory (its *.tf files, local modules followed) or one .tf file. */
export function readTerraformSource(source: string): StackTemplate {
  const model = new Model();
  const isDirectory = fs.statSync(source).isDirectory();
  const parsed = isDirectory ? parseTree(source) : new Map<string, Json>();
  const files = isDirectory
    ? readModuleDirectory(source, parsed)
    : (() => {
        const text = fs.readFileSync(source, 'utf8');
        const [json = {}] = parseHclFiles([{ name: source, text }]);
        return { directory: path.dirname(source), files: [{ file: source, text, json }] };
      })();
  readModule(model, files, '', new Map(), parsed);
  return toStackTemplate(model, path.basename(path.resolve(source)).replace(/\.tf$/, ''), source);
}

/** Reads HCL text (stdin): one file's worth; local module paths are taken from the working directory. */
export function readTerraformText(text: string, name: string): StackTemplate {
  const model = new Model();
  const [json = {}] = parseHclFiles([{ name, text }]);
  readModule(
    model,
    { directory: process.cwd(), files: [{ file: name, text, json }] },
    '',
    new Map(),
    new Map(),
  );
  return toStackTemplate(model, name, name);
}

/** Whether a directory holds a Terraform configuration (a .tf file). */
export function isTerraformDirectory(directory: string): boolean {
  return fs.readdirSync(directory).some((f) => f.endsWith('.tf'));
}

/**
 * Whether a text is HCL rather than a CloudFormation template: its first statement is a
 * Terraform block (`resource "…"`, `terraform {`, `provider "…"`, …).
 */
export function looksLikeHcl(text: string): boolean {
  const first = text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '' && !l.startsWith('#') && !l.startsWith('//'));
  return (
    first !== undefined &&
    /^(resource|data|module|variable|locals|output|provider|terraform|moved|import|check)\b(\s*("[^"]*"|[A-Za-z_][\w-]*))*\s*\{/.test(
      first,
    )
  );
}

// ---------------------------------------------------------------------------------------------
// Plan JSON
// ---------------------------------------------------------------------------------------------

/** Whether a JSON value is `terraform show -json` output of a plan. */
export function isTerraformPlan(value: unknown): value is Json {
  return isRecord(value) && typeof value.format_version === 'string' && isRecord(value.planned_values);
}

/** A plan resource's values with what is known only after apply as references or unknowns. */
function planValues(
  values: unknown,
  unknown: unknown,
  expressions: Json,
  address: string,
  resolveRef: (reference: string) => ResourceRef | undefined,
  configured: boolean,
  at = '',
): TfValue {
  if (unknown === true) {
    const attribute = at.split('.')[0] ?? '';
    const expression = expressions[attribute];
    // Computed by the provider and not written: unset as far as the configuration goes (a queue's
    // redrive_policy shows as unknown in every plan, though nothing sets it).
    if (configured && !at.includes('.') && expression === undefined) return undefined;
    const refs = isRecord(expression) && Array.isArray(expression.references) ? expression.references : [];
    for (const ref of refs) {
      const found = typeof ref === 'string' ? resolveRef(ref) : undefined;
      if (found !== undefined && !at.includes('.')) return found;
    }
    return new Unresolved(`${address}.${at} is known only after apply`);
  }
  if (Array.isArray(values))
    return values.map((v, i) =>
      planValues(
        v,
        Array.isArray(unknown) ? unknown[i] : undefined,
        {},
        address,
        resolveRef,
        configured,
        `${at}[${i}]`,
      ),
    );
  if (isRecord(values) || isRecord(unknown)) {
    const known = isRecord(values) ? values : {};
    const unknownOf = isRecord(unknown) ? unknown : {};
    const keys = new Set([
      ...Object.keys(known),
      ...Object.keys(unknownOf).filter((k) => unknownOf[k] === true),
    ]);
    return Object.fromEntries(
      [...keys].map((k) => [
        k,
        planValues(
          known[k],
          unknownOf[k],
          at === '' ? expressions : {},
          address,
          resolveRef,
          configured,
          at === '' ? k : `${at}.${k}`,
        ),
      ]),
    );
  }
  return values as TfValue;
}

/** Attributes a rule reads only when the configuration writes them (a plan shows their defaults too). */
const WRITTEN_ONLY: Readonly<Record<string, readonly string[]>> = {
  aws_lambda_function: ['timeout', 'memory_size'],
};

/** The configuration block of a module path (`module.a.module.b`) in a plan's `configuration`. */
function configurationModule(plan: Json, modulePath: string): Json | undefined {
  const configuration = isRecord(plan.configuration) ? plan.configuration : {};
  let module: unknown = configuration.root_module;
  for (const name of [...modulePath.matchAll(/module\.([^.[\]]+)/g)].map((m) => m[1] ?? '')) {
    const calls = isRecord(module) && isRecord(module.module_calls) ? module.module_calls : {};
    const call = calls[name];
    module = isRecord(call) ? call.module : undefined;
  }
  return isRecord(module) ? module : undefined;
}

/** Reads a plan (`terraform show -json plan.out`): every planned managed resource, modules included. */
export function readTerraformPlan(plan: Json, name: string): StackTemplate {
  const model = new Model();
  const changes = new Map<string, unknown>();
  for (const change of Array.isArray(plan.resource_changes) ? plan.resource_changes : []) {
    if (isRecord(change) && typeof change.address === 'string' && isRecord(change.change))
      changes.set(change.address, change.change.after_unknown);
  }
  const planned: { address: string; type: string; name: string; values: unknown; module: string }[] = [];
  const walk = (module: unknown): void => {
    if (!isRecord(module)) return;
    for (const r of Array.isArray(module.resources) ? module.resources : []) {
      if (!isRecord(r) || r.mode !== 'managed' || typeof r.address !== 'string' || typeof r.type !== 'string')
        continue;
      const modulePath = r.address.slice(0, Math.max(0, r.address.lastIndexOf(`${r.type}.`) - 1));
      planned.push({
        address: r.address,
        type: r.type,
        name: String(r.name),
        values: r.values,
        module: modulePath,
      });
    }
    for (const child of Array.isArray(module.child_modules) ? module.child_modules : []) walk(child);
  };
  walk(isRecord(plan.planned_values) ? plan.planned_values.root_module : undefined);
  const addresses = new Set(planned.map((p) => p.address));
  for (const p of planned) {
    const config = configurationModule(plan, p.module);
    const resources = config !== undefined && Array.isArray(config.resources) ? config.resources : [];
    const own = resources.find((r) => isRecord(r) && r.type === p.type && r.name === p.name);
    const expressions = isRecord(own) && isRecord(own.expressions) ? own.expressions : {};
    const resolveRef = (reference: string): ResourceRef | undefined => {
      const [type, refName, ...attribute] = reference.split('.');
      const target = `${p.module === '' ? '' : `${p.module}.`}${type}.${refName}`;
      const found = addresses.has(target) ? target : [...addresses].find((a) => a.startsWith(`${target}[`));
      return found === undefined || attribute.length === 0
        ? undefined
        : new ResourceRef(found, attribute.join('.'));
    };
    // A plan fills in the provider's defaults: an attribute the configuration does not write is
    // dropped where a rule asks whether it was written (D4: timeout and memory_size).
    const unwritten =
      own === undefined ? [] : (WRITTEN_ONLY[p.type] ?? []).filter((a) => !(a in expressions));
    model.add({
      address: p.address,
      type: p.type,
      body: () => {
        const body = planValues(
          p.values,
          changes.get(p.address),
          expressions,
          p.address,
          resolveRef,
          own !== undefined,
        ) as Record<string, TfValue>;
        return Object.fromEntries(Object.entries(body).filter(([k]) => !unwritten.includes(k)));
      },
    });
  }
  return toStackTemplate(model, name.replace(/\.json$/i, ''), name);
}
