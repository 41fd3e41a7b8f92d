/**
 * Bench section `backlog`: the backlog experiment (harness/chaos/backlog-experiment.ts) at bench
 * size on a platform of its own. Reports how long the oldest-age alarm took to fire and clear,
 * how long the backlog took to drain, and the latency of fresh critical work before and during
 * the drain (their ratio is the starvation figure), plus the side-queue counts.
 */
import { runCaptured } from '../bin/tenang';
import {
  runBacklogExperiment,
  startBacklogPlatform,
  type BacklogExperimentResult,
  type BacklogExperimentSizes,
} from '../harness/chaos/backlog-experiment';
import { spread } from './backoff';

/** What the report keeps of one run. */
export type BacklogResults = Omit<BacklogExperimentResult, 'steps'> & {
  /** Median during the drain ÷ median with no backlog. */
  readonly criticalLatencyRatio: number;
};

/** Runs the experiment once; alarm clock 30× real time. */
export async function measureBacklog(opts: {
  readonly sizes?: BacklogExperimentSizes;
  readonly log: (line: string) => void;
}): Promise<BacklogResults> {
  const sizes = opts.sizes ?? { backlog: 400, expired: 20, critical: 20 };
  opts.log(
    `backlog: starting a platform (backlog ${sizes.backlog}, stale ${sizes.expired}, critical ${sizes.critical})`,
  );
  const target = await startBacklogPlatform({ clockFactor: 30, log: () => undefined });
  try {
    const run = await runBacklogExperiment(target, sizes, {
      cli: (argv, env) => runCaptured(argv, { env }),
      log: (line) => opts.log(`backlog: ${line}`),
    });
    return backlogResults(run);
  } finally {
    await target.stop();
  }
}

/** What the report keeps of a run: the CLI steps stay out; the rest plus the latency ratio. */
export function backlogResults(run: BacklogExperimentResult): BacklogResults {
  const { steps: _steps, ...result } = run;
  return {
    ...result,
    criticalLatencyRatio:
      spread(result.critical.duringDrainMs).median / spread(result.critical.baselineMs).median,
  };
}

/** The report's backlog section. */
export function backlogSection(r: BacklogResults): string[] {
  const ms = (values: readonly number[]): string => {
    const s = spread(values);
    return `${s.median.toFixed(0)} ms (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
  };
  return [
    '',
    '## Backlog: pause, build a backlog, resume (B1, B4, B5, O3)',
    '',
    `harness/chaos/backlog-experiment.ts on a local platform: \`tenang pause inventory-consumer\` (deferrable), ${r.sizes.backlog} reservations queued behind it (one SKU each, so no lock contention) plus ${r.sizes.expired} notifications already past their useful age; wait for the oldest-age alarm; \`tenang resume\`; ${r.sizes.critical} fresh payments (critical) measured before the backlog and again while it drains. CloudWatch's part runs on a clock ${r.clockFactor}× real time (functions, queues and moto in real time), so the 300 s objective is crossed in seconds. One run; the test \`test/integration/backlog.test.ts\` asserts the outcomes at a smaller size.`,
    '',
    '| figure | value |',
    '| --- | --- |',
    `| oldest-age alarm before the backlog | ${r.ageAlarm.stateBefore} |`,
    `| fired after (alarm clock) | ${r.ageAlarm.firedAfterClockSeconds.toFixed(0)} s (objective 300 s, 2 of 3 one-minute periods) |`,
    `| fired after (real time) | ${r.ageAlarm.firedAfterSeconds.toFixed(1)} s |`,
    `| backlog drained after resume | ${r.backlog.drainSeconds.toFixed(1)} s |`,
    `| alarm back to OK after the drain | ${r.ageAlarm.clearedAfterDrainSeconds.toFixed(1)} s real (final state ${r.ageAlarm.finalState}) |`,
    `| backlog jobs done once / twice / not / in DLQ | ${r.backlog.reservedOnce} / ${r.backlog.reservedTwice} / ${r.backlog.notReserved} / ${r.backlog.inDlq} |`,
    `| critical pay → PAID, no backlog | ${ms(r.critical.baselineMs)} |`,
    `| critical pay → PAID, during the drain | ${ms(r.critical.duringDrainMs)} |`,
    `| **ratio** during ÷ before | **${r.criticalLatencyRatio.toFixed(2)}** |`,
    `| deferrable jobs still queued when the last critical job was done | ${r.critical.backlogLeftWhenCriticalDone} |`,
    `| critical queue's own age alarm fired | ${r.criticalAgeAlarmFired ? '**yes**' : 'no'} |`,
    `| stale notifications sent / in the side queue / counted (JobExpired) / delivered anyway | ${r.expired.sent} / ${r.expired.inSideQueue} / ${r.expired.counted} / ${r.expired.deliveredAnyway} |`,
    '',
    'Critical work has its own queue and consumer (B1), so it does not wait behind the deferrable backlog: it is done while that backlog is still queued. What slows it during the drain is the shared emulator (one moto serves every table, and DynamoDB requests are served one at a time) and the shared CPU; in AWS the queues, functions and table partitions are separate.',
  ];
}
