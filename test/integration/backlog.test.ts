/**
 * The backlog experiment (harness/chaos/backlog-experiment.ts) at CI size, on a platform of its own:
 * the deferrable consumer paused with `tenang pause`, a backlog and stale notifications behind
 * it, the oldest-age alarm (on a clock 30× real time), `tenang resume`, fresh payments while it
 * drains. Asserted here are outcomes and orderings, never durations: how long things took is
 * measured by `npm run bench -- --only backlog` (bench/REPORT.md). The latency section's smoke rides
 * on the same platform once the experiment is over (bench/latency.ts at a tiny size).
 */
import { backlogResults, backlogSection } from '../../bench/backlog';
import { latencySection, runLatencyExperiment, type LatencyFigure } from '../../bench/latency';
import { runCaptured } from '../../bin/tenang';
import {
  runBacklogExperiment,
  startBacklogPlatform,
  type BacklogExperimentResult,
  type BacklogPlatform,
} from '../../harness/chaos/backlog-experiment';

jest.setTimeout(15 * 60_000);

const SIZES = { backlog: 150, expired: 6, critical: 6 };
/** The latency section's smoke: its instances are warm from the backlog experiment; two rounds run both orders. */
const LATENCY_SIZES = { jobsPerType: 3, warmupPerType: 0, ratePerSecond: 5, rounds: 2, invalidations: 3 };

describe('backlog: pause, build a backlog, resume (B1, B4, B5, O3)', () => {
  let target: BacklogPlatform;
  let result: BacklogExperimentResult;

  beforeAll(async () => {
    target = await startBacklogPlatform({ clockFactor: 30 });
    result = await runBacklogExperiment(target, SIZES, { cli: (argv, env) => runCaptured(argv, { env }) });
  }, 15 * 60_000);

  afterAll(async () => {
    await target?.stop();
  });

  it('when the consumer is paused and resumed, both steps went through the CLI and succeeded', () => {
    // Assess
    expect(result.steps.map((s) => [s.argv[0], s.code])).toEqual([
      ['pause', 0],
      ['resume', 0],
    ]);
  });

  it('when the backlog waits past its objective, the oldest-age alarm fires, and it clears once the backlog drained', () => {
    // Assess
    expect(result.ageAlarm.stateBefore).toBe('OK');
    // Not before the oldest job passed the inventory objective (300 s on the alarm clock).
    expect(result.ageAlarm.firedAfterClockSeconds).toBeGreaterThanOrEqual(300);
    expect(result.ageAlarm.finalState).toBe('OK');
  });

  it('when the backlog drains, every job is done exactly once and none is dead-lettered', () => {
    // Assess
    expect(result.backlog).toMatchObject({
      reservedOnce: SIZES.backlog,
      reservedTwice: 0,
      notReserved: 0,
      inDlq: 0,
    });
  });

  it('when fresh critical work arrives during the drain, it is done while deferrable work is still queued, and its own age alarm never fires', () => {
    // Assess
    expect(result.critical.duringDrainMs).toHaveLength(SIZES.critical);
    expect(result.critical.backlogLeftWhenCriticalDone).toBeGreaterThan(0);
    expect(result.criticalAgeAlarmFired).toBe(false);
  });

  it('when sheddable work is past its useful age, it goes to the side queue and is counted, and none of it is sent', () => {
    // Assess
    expect(result.expired).toEqual({
      sent: SIZES.expired,
      inSideQueue: SIZES.expired,
      counted: SIZES.expired,
      deliveredAnyway: 0,
    });
  });

  it("when the bench's backlog section is rendered from this run (its smoke in npm test), every figure is a number and the ratio is the medians'", () => {
    // Act
    const figures = backlogResults(result);
    const section = backlogSection(figures).join('\n');

    // Assess: what the bench adds to the experiment's result, and a report without holes.
    expect(figures).not.toHaveProperty('steps');
    expect(Number.isFinite(figures.criticalLatencyRatio)).toBe(true);
    expect(figures.criticalLatencyRatio).toBeGreaterThan(0);
    expect(section).toContain('## Backlog: pause, build a backlog, resume');
    expect(section).not.toMatch(/NaN|undefined|Infinity/);
  });

  it("when the latency experiment runs on this platform (the bench's latency section's smoke), every job and update is timed and the section renders with a number in every figure", async () => {
    // Act
    const latency = await runLatencyExperiment(target, LATENCY_SIZES);
    const section = latencySection(latency).join('\n');

    // Assess: counts are the sizes sent; timings are the bench's business, only their presence is checked.
    const figures: LatencyFigure[] = [
      ...latency.jobs.flatMap((j) => [j.tenang, j.bare]),
      latency.invalidation,
    ];
    expect(latency.jobs.map((j) => j.jobType)).toEqual([
      'payment.capture',
      'notification.send',
      'inventory.reserve',
    ]);
    expect(figures.map((f) => f.count)).toEqual([
      ...latency.jobs.flatMap(() => [
        LATENCY_SIZES.rounds * LATENCY_SIZES.jobsPerType,
        LATENCY_SIZES.rounds * LATENCY_SIZES.jobsPerType,
      ]),
      LATENCY_SIZES.invalidations,
    ]);
    for (const f of figures)
      for (const value of [f.p50, f.p99, f.max]) {
        expect(Number.isFinite(value)).toBe(true);
        expect(value).toBeGreaterThan(0);
      }
    expect(latency.jobs.map((j) => j.succeeded)).toEqual(
      latency.jobs.map(
        () => LATENCY_SIZES.rounds * (LATENCY_SIZES.warmupPerType + LATENCY_SIZES.jobsPerType),
      ),
    );
    expect(latency.jobs.every((j) => Number.isInteger(j.deferred))).toBe(true);
    expect(section).toContain('## Latency: enqueue → done, and invalidation lag');
    expect(section).not.toMatch(/NaN|undefined|Infinity/);
  }, 120_000);
});
