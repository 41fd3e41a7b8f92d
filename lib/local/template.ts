/**
 * Resolves the intrinsic functions of a synthesized template against what the stack deployed,
 * for the resources the emulator's CloudFormation skips (alarms) and for reading settings the
 * template holds. Supports what CDK emits for them: Ref, Fn::GetAtt, Fn::Join, Fn::Select,
 * Fn::Split and the pseudo parameters.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DeployedResource } from '../adapters/aws/deployment';
import { queueNameFromUrl } from '../adapters/aws/deployment';

/** A CloudFormation template (the parts read here). */
export interface Template {
  /** Template metadata (the stack's pipeline declaration lives under `tenang:pipeline`). */
  readonly Metadata?: Record<string, unknown>;
  readonly Resources: Record<
    string,
    { Type: string; Properties?: Record<string, unknown>; Metadata?: Record<string, unknown> }
  >;
}

/** Reads `<stack>.template.json` from a cloud assembly directory. */
export function readTemplate(assemblyDir: string, stackName: string): Template {
  return JSON.parse(
    fs.readFileSync(path.join(assemblyDir, `${stackName}.template.json`), 'utf8'),
  ) as Template;
}

/** The deployment context references resolve against. */
export interface ResolveContext {
  readonly region: string;
  readonly accountId: string;
  readonly template: Template;
  /** Deployed resources by logical id. */
  readonly resources: ReadonlyMap<string, DeployedResource>;
  /**
   * Attributes only the emulator's own APIs know, by `<logicalId>.<attribute>` (a table's
   * StreamArn, from DescribeTable). @default none
   */
  readonly attributes?: ReadonlyMap<string, string>;
}

/** Raised when a reference cannot be resolved; names the reference. */
export class UnresolvableReferenceError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'UnresolvableReferenceError';
  }
}

function physicalId(ctx: ResolveContext, logicalId: string): string {
  const resource = ctx.resources.get(logicalId);
  if (resource !== undefined) return resource.physicalId;
  // Resources the emulator skipped have no physical id; alarms are named in the template.
  const props = ctx.template.Resources[logicalId]?.Properties;
  const name = props?.AlarmName;
  if (typeof name === 'string') return name;
  throw new UnresolvableReferenceError(`no deployed resource ${logicalId}`);
}

function arn(ctx: ResolveContext, service: string, resource: string): string {
  return `arn:aws:${service}:${ctx.region}:${ctx.accountId}:${resource}`;
}

function getAtt(ctx: ResolveContext, logicalId: string, attribute: string): string {
  const known = ctx.attributes?.get(`${logicalId}.${attribute}`);
  if (known !== undefined) return known;
  const type = ctx.template.Resources[logicalId]?.Type;
  const id = physicalId(ctx, logicalId);
  switch (`${type}.${attribute}`) {
    case 'AWS::SQS::Queue.QueueName':
      return queueNameFromUrl(id);
    case 'AWS::SQS::Queue.Arn':
      return arn(ctx, 'sqs', queueNameFromUrl(id));
    case 'AWS::SQS::Queue.QueueUrl':
      return id;
    case 'AWS::CloudWatch::Alarm.Arn':
    case 'AWS::CloudWatch::CompositeAlarm.Arn':
      return arn(ctx, 'cloudwatch', `alarm:${id}`);
    case 'AWS::Lambda::Function.Arn':
      return arn(ctx, 'lambda', `function:${id}`);
    case 'AWS::DynamoDB::Table.Arn':
      return arn(ctx, 'dynamodb', `table/${id}`);
    case 'AWS::SNS::Topic.TopicArn':
      return id;
    case 'AWS::Logs::LogGroup.Arn':
      return arn(ctx, 'logs', `log-group:${id}:*`);
    case 'AWS::KMS::Key.Arn':
      return id.startsWith('arn:') ? id : arn(ctx, 'kms', `key/${id}`);
    case 'AWS::IAM::Role.Arn':
      return id.startsWith('arn:') ? id : `arn:aws:iam::${ctx.accountId}:role/${id}`;
    default:
      throw new UnresolvableReferenceError(
        `cannot resolve Fn::GetAtt ${logicalId}.${attribute} (${String(type)})`,
      );
  }
}

/** Resolves every intrinsic function in `value`. */
export function resolve(value: unknown, ctx: ResolveContext): unknown {
  if (Array.isArray(value)) return value.map((v) => resolve(v, ctx));
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length === 1) {
    const [key] = keys;
    const arg = obj[key as string];
    switch (key) {
      case 'Ref': {
        const name = String(arg);
        if (name === 'AWS::Region') return ctx.region;
        if (name === 'AWS::AccountId') return ctx.accountId;
        if (name === 'AWS::Partition') return 'aws';
        if (name === 'AWS::URLSuffix') return 'amazonaws.com';
        return physicalId(ctx, name);
      }
      case 'Fn::GetAtt': {
        const [logicalId, attribute] = Array.isArray(arg) ? (arg as string[]) : String(arg).split('.');
        return getAtt(ctx, String(logicalId), String(attribute));
      }
      case 'Fn::Join': {
        const [sep, parts] = arg as [string, unknown[]];
        return (resolve(parts, ctx) as unknown[]).map(String).join(sep);
      }
      case 'Fn::Select': {
        const [index, list] = arg as [number | string, unknown];
        return (resolve(list, ctx) as unknown[])[Number(index)];
      }
      case 'Fn::Split': {
        const [sep, source] = arg as [string, unknown];
        return String(resolve(source, ctx)).split(sep);
      }
      default:
        break;
    }
  }
  return Object.fromEntries(keys.map((k) => [k, resolve(obj[k], ctx)]));
}
