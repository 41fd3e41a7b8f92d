/**
 * What was deployed into the emulator, read from the emulator's own APIs (stack resources,
 * function configurations, event source mappings) and, for the code, from the cloud assembly
 * the stack was deployed from. Nothing here is a second, hand-written list of resources.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  GetFunctionConfigurationCommand,
  LambdaClient,
  paginateListEventSourceMappings,
} from '@aws-sdk/client-lambda';
import { GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { FunctionSpec } from './function-host';
import type { SqsMappingSpec } from './sqs-event-source';
import type { StreamMappingSpec } from './stream-event-source';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { STREAM_ARN_METADATA } from '../infra/stream-consumer';
import type { ResolveContext } from './template';

/** A deployed function with the logical id it has in the template. */
export interface DeployedFunction extends FunctionSpec {
  readonly logicalId: string;
  /** The execution role's ARN (GetFunctionConfiguration's Role). */
  readonly roleArn: string;
}

/** An HTTP API route and the function behind it. */
export interface DeployedRoute {
  readonly method: string;
  /** Path template, e.g. /orders/{id}/payments. */
  readonly path: string;
  readonly functionName: string;
}

/** Everything the local platform runs. */
export interface LocalDeployment {
  readonly functions: ReadonlyMap<string, DeployedFunction>;
  readonly sqsMappings: readonly SqsMappingSpec[];
  readonly streamMappings: readonly StreamMappingSpec[];
  readonly routes: readonly DeployedRoute[];
}

/** Raised when the deployment cannot be read or does not match the assembly. */
export class DeploymentReadError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'DeploymentReadError';
  }
}

/** AWS's default cap for SQS mappings without a MaximumConcurrency is 1000; locally we poll with fewer. */
const DEFAULT_LOCAL_SQS_CONCURRENCY = 5;

function functionNameFromArn(arn: string): string {
  return arn.slice(arn.lastIndexOf(':') + 1);
}

function bundleFile(assemblyDir: string, ctx: ResolveContext, logicalId: string): string {
  const assetPath = ctx.template.Resources[logicalId]?.Metadata?.['aws:asset:path'];
  if (typeof assetPath !== 'string')
    throw new DeploymentReadError(`function ${logicalId} has no bundled asset in the assembly`);
  const dir = path.join(assemblyDir, assetPath);
  const file = ['index.mjs', 'index.js'].map((f) => path.join(dir, f)).find((f) => fs.existsSync(f));
  if (file === undefined) throw new DeploymentReadError(`no index.mjs or index.js in ${dir}`);
  return file;
}

/** Reads functions, mappings and routes of a deployed stack. */
export async function readLocalDeployment(
  clients: { readonly lambda: LambdaClient; readonly sqs: SQSClient; readonly dynamodb: DynamoDBClient },
  assemblyDir: string,
  ctx: ResolveContext,
): Promise<LocalDeployment> {
  const functions = new Map<string, DeployedFunction>();
  const byLogicalId = new Map<string, string>();
  for (const r of ctx.resources.values()) {
    if (r.type !== 'AWS::Lambda::Function') continue;
    const cfg = await clients.lambda.send(
      new GetFunctionConfigurationCommand({ FunctionName: r.physicalId }),
    );
    const handler = cfg.Handler ?? 'index.handler';
    functions.set(r.physicalId, {
      logicalId: r.logicalId,
      roleArn: cfg.Role ?? '',
      name: r.physicalId,
      bundleFile: bundleFile(assemblyDir, ctx, r.logicalId),
      handlerName: handler.slice(handler.lastIndexOf('.') + 1),
      timeoutSeconds: cfg.Timeout ?? 3,
      memoryMb: cfg.MemorySize ?? 128,
      environment: cfg.Environment?.Variables ?? {},
    });
    byLogicalId.set(r.logicalId, r.physicalId);
  }

  const queueUrl = async (arn: string): Promise<string> => {
    const { QueueUrl } = await clients.sqs.send(
      new GetQueueUrlCommand({ QueueName: arn.slice(arn.lastIndexOf(':') + 1) }),
    );
    if (QueueUrl === undefined) throw new DeploymentReadError(`no queue for ${arn}`);
    return QueueUrl;
  };

  // Stream mappings the emulator target decoupled from their stream (TargetTraits.decoupleStreamMappings).
  const decoupled = new Map<string, string>();
  for (const r of ctx.resources.values()) {
    const ref = ctx.template.Resources[r.logicalId]?.Metadata?.[STREAM_ARN_METADATA] as
      { 'Fn::GetAtt'?: [string, string] } | undefined;
    const tableLogicalId = ref?.['Fn::GetAtt']?.[0];
    if (r.type !== 'AWS::Lambda::EventSourceMapping' || tableLogicalId === undefined) continue;
    const tableName = ctx.resources.get(tableLogicalId)?.physicalId;
    const { Table } = await clients.dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.LatestStreamArn === undefined)
      throw new DeploymentReadError(`table ${String(tableName)} has no stream`);
    decoupled.set(r.physicalId, Table.LatestStreamArn);
  }

  const sqsMappings: SqsMappingSpec[] = [];
  const streamMappings: StreamMappingSpec[] = [];
  for await (const page of paginateListEventSourceMappings({ client: clients.lambda }, {})) {
    for (const m of page.EventSourceMappings ?? []) {
      const fn = functionNameFromArn(m.FunctionArn ?? '');
      if (!functions.has(fn) || m.UUID === undefined || m.EventSourceArn === undefined) continue;
      const reportBatchItemFailures = (m.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures');
      const streamArn =
        decoupled.get(m.UUID) ?? (m.EventSourceArn.includes(':dynamodb:') ? m.EventSourceArn : undefined);
      if (streamArn === undefined && m.EventSourceArn.startsWith('arn:aws:sqs:')) {
        sqsMappings.push({
          uuid: m.UUID,
          functionName: fn,
          queueArn: m.EventSourceArn,
          queueUrl: await queueUrl(m.EventSourceArn),
          batchSize: m.BatchSize ?? 10,
          batchingWindowSeconds: m.MaximumBatchingWindowInSeconds ?? 0,
          maxConcurrency: m.ScalingConfig?.MaximumConcurrency ?? DEFAULT_LOCAL_SQS_CONCURRENCY,
          reportBatchItemFailures,
        });
      } else if (streamArn !== undefined) {
        const onFailure = m.DestinationConfig?.OnFailure?.Destination;
        streamMappings.push({
          uuid: m.UUID,
          functionName: fn,
          streamArn,
          batchSize: m.BatchSize ?? 100,
          bisectBatchOnError: m.BisectBatchOnFunctionError ?? false,
          retryAttempts: m.MaximumRetryAttempts ?? -1,
          maxRecordAgeSeconds: m.MaximumRecordAgeInSeconds ?? -1,
          reportBatchItemFailures,
          onFailureQueueUrl: onFailure === undefined ? undefined : await queueUrl(onFailure),
        });
      }
    }
  }

  return { functions, sqsMappings, streamMappings, routes: readRoutes(ctx, byLogicalId) };
}

/** HTTP API routes from the template: RouteKey → integration → function. */
function readRoutes(ctx: ResolveContext, functionByLogicalId: ReadonlyMap<string, string>): DeployedRoute[] {
  const resources = ctx.template.Resources;
  const routes: DeployedRoute[] = [];
  for (const r of Object.values(resources)) {
    if (r.Type !== 'AWS::ApiGatewayV2::Route') continue;
    const routeKey = String(r.Properties?.RouteKey ?? '');
    const target = JSON.stringify(r.Properties?.Target ?? '');
    const integrationId = /"Ref":"([^"]+)"/.exec(target)?.[1];
    const uri = JSON.stringify(
      integrationId === undefined ? '' : (resources[integrationId]?.Properties?.IntegrationUri ?? ''),
    );
    const fnLogicalId = /"Fn::GetAtt":\["([^"]+)","Arn"\]/.exec(uri)?.[1];
    const functionName = fnLogicalId === undefined ? undefined : functionByLogicalId.get(fnLogicalId);
    const [method, routePath] = routeKey.split(' ');
    if (method === undefined || routePath === undefined || functionName === undefined) {
      throw new DeploymentReadError(`route ${routeKey || '(unnamed)'} has no function behind it`);
    }
    routes.push({ method, path: routePath, functionName });
  }
  return routes;
}
