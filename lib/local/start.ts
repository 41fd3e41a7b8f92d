/**
 * `npm start`: the local pipeline end to end. Brings up moto (and the scenario's own Redis),
 * deploys the synthesized app into moto with a real `cdk deploy`, prints what was deployed (read
 * back from the emulator's own APIs), then runs a scenario with a live status and writes its
 * report (lib/local/scenario.ts).
 */
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { readStackStatus, type StackStatus } from '../ops/stack-status';
import { renderTable } from '../ops/table';
import type { LocalPlatform } from './platform';
import { runScenario, type ScenarioOutcome } from './scenario';

/** Options of startLocalPipeline. */
export interface StartOptions {
  /** @default 'dev' */
  readonly stage?: string;
  /** @default 'default' */
  readonly scenario?: string;
  /** Seconds of traffic. @default the scenario's */
  readonly durationSeconds?: number;
  /** Payments per second. @default the scenario's */
  readonly ratePerSecond?: number;
  /** Progress lines. */
  readonly log: (line: string) => void;
  /** Where the status and the summary go. */
  readonly out: (text: string) => void;
  /** Redraw the live status in place (stdout is a terminal). */
  readonly tty: boolean;
  readonly columns?: number;
  /** Ctrl-C. */
  readonly signal?: AbortSignal;
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

/** Prints the deployed stack and its alarms, read back from the emulator. */
async function printDeployment(platform: LocalPlatform, out: (text: string) => void): Promise<void> {
  const config = { endpoint: platform.env.endpoint, region: platform.env.region };
  const clients = {
    cfn: new CloudFormationClient(config),
    sqs: new SQSClient(config),
    dynamodb: new DynamoDBClient(config),
  };
  try {
    out(renderStackStatus(await readStackStatus(clients, platform.provisioned.stackName)));
    const { alarms } = platform.provisioned;
    out(
      `\nAlarms: ${alarms.metricAlarms.length} metric alarms in the emulator, ${alarms.compositeAlarms.length} composite alarms kept by the local evaluator (moto has no PutCompositeAlarm).\n\n`,
    );
  } finally {
    for (const c of Object.values(clients)) c.destroy();
  }
}

/** Deploys, runs the scenario with a live status, writes its report and stops what it started. */
export async function startLocalPipeline(opts: StartOptions): Promise<ScenarioOutcome> {
  return runScenario({
    scenario: opts.scenario,
    durationSeconds: opts.durationSeconds,
    ratePerSecond: opts.ratePerSecond,
    stage: opts.stage,
    log: opts.log,
    out: opts.out,
    tty: opts.tty,
    columns: opts.columns,
    signal: opts.signal,
    onProvisioned: (platform) => printDeployment(platform, opts.out),
  });
}
