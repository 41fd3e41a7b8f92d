/**
 * The scenario's watch for consumer processes that died without a planned crash, and its wait
 * for their in-flight batches. The poller lines come from a real SqsEventSource (over a fake SQS
 * client) delivering to an invocation that crashed or timed out, so a change of their wording
 * fails here; the crash hook's lines from lib/adapters/crash.ts.
 */
import { GetQueueAttributesCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { crashHookFrom } from '../../../lib/adapters/crash';
import type { InvokeResult } from '../../../lib/local/function-host';
import type { PipelineSample, QueueSample } from '../../../lib/local/report-model';
import {
  ProcessDeathWatch,
  REDELIVERY_POLL_MS,
  RedeliveryWait,
  redeliveryIncident,
  UNPLANNED_DEATH_KIND,
} from '../../../lib/local/scenario-deaths';
import { SqsEventSource } from '../../../lib/local/sqs-event-source';
import { receivedMessage } from '../../helpers/sqs-events';

const FN = 'tenang-dev-payment-consumer';
const CONSUMER = {
  consumer: 'payment-consumer',
  functionName: FN,
  jobType: 'payment.capture',
  visibilityTimeoutSeconds: 30,
};

const MESSAGE = receivedMessage('m1', 'r1');

/** What a real poller logs when one delivery ends with `result`. */
async function pollerLines(result: InvokeResult): Promise<string[]> {
  const lines: string[] = [];
  let delivered = false;
  const sqs = {
    send: async (command: unknown): Promise<unknown> => {
      if (command instanceof GetQueueAttributesCommand) return { Attributes: { VisibilityTimeout: '30' } };
      if (command instanceof ReceiveMessageCommand) {
        if (!delivered) {
          delivered = true;
          return { Messages: [MESSAGE] };
        }
        // An empty long poll takes its time (and lets timers run).
        await new Promise((r) => setTimeout(r, 10));
        return { Messages: [] };
      }
      return {};
    },
  } as unknown as SQSClient;
  let invoked: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (invoked = resolve));
  const source = new SqsEventSource(
    {
      uuid: 'u1',
      functionName: FN,
      queueUrl: 'http://localhost/123456789012/q.fifo',
      queueArn: 'arn:aws:sqs:us-east-1:123456789012:q.fifo',
      batchSize: 1,
      batchingWindowSeconds: 0,
      maxConcurrency: 1,
      reportBatchItemFailures: true,
    },
    sqs,
    {
      isEnabled: () => true,
      invoke: () => {
        invoked();
        return Promise.resolve(result);
      },
    },
    (line) => lines.push(line),
  );
  source.start();
  await done;
  await source.stop();
  return lines;
}

const killed: InvokeResult = {
  status: 'crash',
  errorType: 'Runtime.ExitError',
  errorMessage: 'the execution environment exited (SIGKILL)',
  durationMs: 12,
  coldStart: false,
};
const timedOut: InvokeResult = {
  status: 'timeout',
  errorType: 'Sandbox.Timedout',
  errorMessage: 'Task timed out after 30.00 seconds',
  durationMs: 30_000,
  coldStart: false,
};

/** The line the crash hook prints before it kills (or hangs) the process. */
function hookLine(spec: string, point: 'after-side-effect'): string {
  const written: string[] = [];
  const write = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    written.push(String(chunk));
    return true;
  });
  try {
    crashHookFrom(
      spec,
      () => undefined,
      () => undefined,
    )(point);
  } finally {
    write.mockRestore();
  }
  return written.join('').trim();
}

function sample(inFlight: number): PipelineSample {
  const q: QueueSample = { depth: 0, inFlight, oldestAgeSeconds: 0, dlq: 0, paused: false };
  return {
    atMs: 0,
    queues: { 'payment.capture': q },
    streams: {},
    counters: {},
    degraded: false,
    alarmsInAlarm: [],
  };
}

describe('Class: ProcessDeathWatch', () => {
  it('when a poller reports a crashed invocation and no crash was planned, the death is unplanned', async () => {
    // Prepare
    const watch = new ProcessDeathWatch(() => 1_000);

    // Act
    for (const line of await pollerLines(killed)) watch.onPlatformLine(line);

    // Assess
    expect(watch.unplanned([FN])).toEqual([
      {
        functionName: FN,
        count: 1,
        last: {
          functionName: FN,
          status: 'crash',
          reason: 'the execution environment exited (SIGKILL)',
          at: 1_000,
        },
      },
    ]);
  });

  it('when the crash hook announced the crash first, the death was planned', async () => {
    // Prepare
    const watch = new ProcessDeathWatch();

    // Act
    watch.onFunctionLine(hookLine('after-side-effect', 'after-side-effect'), FN);
    for (const line of await pollerLines(killed)) watch.onPlatformLine(line);

    // Assess
    expect(watch.deathsOf(FN)).toHaveLength(1);
    expect(watch.unplanned([FN])).toEqual([]);
  });

  it('when a planned hang ran into the timeout and another instance was killed, one death is unplanned', async () => {
    // Prepare
    const watch = new ProcessDeathWatch();

    // Act
    watch.onFunctionLine(hookLine('hang:after-side-effect', 'after-side-effect'), FN);
    for (const line of [...(await pollerLines(timedOut)), ...(await pollerLines(killed))])
      watch.onPlatformLine(line);

    // Assess
    expect(watch.unplanned([FN]).map((u) => [u.count, u.last.status])).toEqual([[1, 'crash']]);
  });

  it('when the function only threw, or another function died, nothing is unplanned for the consumer', async () => {
    // Prepare
    const watch = new ProcessDeathWatch();
    const threw: InvokeResult = { ...killed, status: 'error', errorType: 'Error', errorMessage: 'boom' };

    // Act
    for (const line of await pollerLines(threw)) watch.onPlatformLine(line);
    watch.onPlatformLine(
      'tenang-dev-outbox-relay: crash: Runtime.ExitError: the execution environment exited (SIGKILL)',
    );
    watch.onPlatformLine(`${FN}: poll failed: connect ECONNREFUSED`);

    // Assess
    expect(watch.unplanned([FN])).toEqual([]);
  });
});

describe('Class: RedeliveryWait', () => {
  const runStart = 100_000;

  function setup(deathAt: number): { wait: RedeliveryWait; clock: { now: number }; lines: string[] } {
    const clock = { now: deathAt };
    const watch = new ProcessDeathWatch(() => clock.now);
    watch.onPlatformLine(`${FN}: crash: Runtime.ExitError: the execution environment exited (SIGKILL)`);
    const lines: string[] = [];
    const drainStart = runStart + 20_000;
    const wait = new RedeliveryWait(
      watch,
      [CONSUMER],
      drainStart,
      (l) => lines.push(l),
      runStart,
      () => clock.now,
    );
    return { wait, clock, lines };
  }

  it('when a consumer died unexpectedly, the drain waits until the visibility timeout after the death plus a poll, announced once', () => {
    // Prepare
    const { wait, lines } = setup(runStart + 8_000);

    // Act
    const first = wait.returnsBy();
    const again = wait.returnsBy();

    // Assess
    expect(first).toBe(runStart + 8_000 + 30_000 + REDELIVERY_POLL_MS);
    expect(again).toBe(first);
    expect(lines).toEqual([
      'payment-consumer: a process died without a planned crash (last at 8.0 s, crash: the execution environment exited (SIGKILL)); its batch stays in flight for the 30 s visibility timeout of payment.capture: waiting for it until 40.0 s before judging',
    ]);
  });

  it('when its queue has nothing in flight any more, the wait is over and reported with how long it took', () => {
    // Prepare
    const { wait, clock, lines } = setup(runStart + 8_000);
    wait.returnsBy();

    // Act
    clock.now = runStart + 30_000;
    wait.observe(sample(1));
    clock.now = runStart + 38_500;
    wait.observe(sample(0));
    clock.now = runStart + 41_500;
    const [record] = wait.finish();

    // Assess
    expect(record).toMatchObject({
      jobType: 'payment.capture',
      deaths: 1,
      clearedAt: runStart + 38_500,
      waitedMs: 18_500,
    });
    expect(lines.at(-1)).toBe(
      "waited 18.5 s for payment.capture's in-flight batch after payment-consumer's unplanned death: redelivered and done before judging",
    );
    const incident = redeliveryIncident(record!, runStart);
    expect(incident).toMatchObject({
      kind: UNPLANNED_DEATH_KIND,
      injected: true,
      startMs: 8_000,
      endMs: 38_500,
    });
  });

  it('when the batch never came back before the drain ended, the report says it was still in flight', () => {
    // Prepare
    const { wait, clock, lines } = setup(runStart + 8_000);
    wait.returnsBy();

    // Act
    wait.observe(sample(1));
    clock.now = runStart + 65_000;
    const [record] = wait.finish();

    // Assess
    expect(record?.clearedAt).toBeUndefined();
    expect(record?.waitedMs).toBe(45_000);
    expect(lines.at(-1)).toMatch(/still in flight when the drain ended$/);
  });

  it('when nothing died, there is nothing to wait for', () => {
    // Prepare
    const wait = new RedeliveryWait(new ProcessDeathWatch(), [CONSUMER], runStart, () => undefined, runStart);

    // Act, Assess
    expect(wait.returnsBy()).toBe(0);
    expect(wait.finish()).toEqual([]);
  });
});
