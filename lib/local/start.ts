/**
 * `npm start`: the local pipeline end to end. Brings up moto and Redis, deploys the synthesized
 * app into moto with a real `cdk deploy`, and prints what was deployed, read back from the
 * emulator's own APIs.
 */
import * as path from 'node:path';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { readStackStatus, type StackStatus } from '../ops/stack-status';
import { renderTable } from '../ops/table';
import { startLocalEnv } from './env';
import { provisionIntoEmulator } from './provision';

/** Options of startLocalPipeline. */
export interface StartOptions {
  /** @default 'dev' */
  readonly stage?: string;
  /** Progress lines. */
  readonly log: (line: string) => void;
  /** Where the status goes. */
  readonly out: (text: string) => void;
}

/** Renders a stack status as two tables. */
export function renderStackStatus(status: StackStatus): string {
  const queues = renderTable(
    ['queue', 'kind', 'visible', 'in flight', 'visibility s', 'max receives', 'dead-letter queue'],
    status.queues.map((q) => ({
      queue: q.queue,
      kind: q.kind,
      visible: String(q.visibleMessages),
      'in flight': String(q.inFlight),
      'visibility s': String(q.visibilityTimeoutSeconds),
      'max receives': q.maxReceiveCount === undefined ? '-' : String(q.maxReceiveCount),
      'dead-letter queue': q.deadLetterQueue ?? '-',
    })),
  );
  const tables = renderTable(
    ['table', 'status', 'stream', 'items'],
    status.tables.map((t) => ({
      table: t.table,
      status: t.status,
      stream: t.stream,
      items: String(t.items),
    })),
  );
  return `Stack ${status.stackName}\n\n${queues}\n\n${tables}\n`;
}

/** Runs the local pipeline once and stops what it started. */
export async function startLocalPipeline(opts: StartOptions): Promise<void> {
  const projectRoot = path.resolve(__dirname, '..', '..');
  const env = await startLocalEnv({ log: opts.log, projectRoot });
  // This process talks to the emulator too (credentials, region): it gets the same variables.
  Object.assign(process.env, env.env);
  try {
    const { stackName, alarms } = await provisionIntoEmulator({
      projectRoot,
      env: env.env,
      stage: opts.stage,
      log: opts.log,
    });
    const clientConfig = { endpoint: env.endpoint, region: env.region };
    const status = await readStackStatus(
      {
        cfn: new CloudFormationClient(clientConfig),
        sqs: new SQSClient(clientConfig),
        dynamodb: new DynamoDBClient(clientConfig),
      },
      stackName,
    );
    opts.out(renderStackStatus(status));
    opts.out(
      `\nAlarms: ${alarms.metricAlarms.length} metric alarms created in the emulator from the template; ${alarms.compositeAlarms.length} composite alarms kept by the local evaluator (moto has no PutCompositeAlarm).\n`,
    );
  } finally {
    await env.stop();
  }
}
