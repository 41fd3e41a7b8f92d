/**
 * The chaos suite (CI size: CI_FAULT_CONFIG_NAMES, every fault in at least one configuration;
 * CHAOS_CONFIGS=all for the whole matrix of harness/chaos/faults.ts), each configuration over
 * fast-check-drawn fault plans (timing, rates, workload seed), on local platforms where a crash
 * is a real process dying. Configurations run concurrently on CHAOS_PLATFORMS platforms (default
 * 3: measured 392 s for the 19 configurations against 507 s on 2, on this 2-core machine), one configuration per platform at a time. A failure prints the fast-check seed and path;
 * replay with CHAOS_SEED=<seed> (and CHAOS_CONFIGS=<name,…> to run only some configurations).
 * A run fails too when one of its configuration's faults left no evidence of firing.
 */
import fc from 'fast-check';
import { describeViolations } from '../../harness/chaos/checker';
import {
  CI_FAULT_CONFIG_NAMES,
  FAULT_CONFIGS,
  faultPlanArbitrary,
  unfiredFaults,
} from '../../harness/chaos/faults';
import { ChaosPlatformPool, runChaos } from '../../harness/chaos/runner';

const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.CHAOS_RUNS ?? 1);
const JOBS = Number(process.env.CHAOS_JOBS ?? 12);
const KEYS = Number(process.env.CHAOS_KEYS ?? 3);
const PLATFORMS = Number(process.env.CHAOS_PLATFORMS ?? 3);
const ONLY = process.env.CHAOS_CONFIGS?.split(',').filter(Boolean);
/** Every run's function and platform output, to explain a failure (reports/ is not committed). */
const LOG_DIR = process.env.CHAOS_LOG_DIR ?? 'reports/chaos';
// CI size unless asked: CHAOS_CONFIGS=all runs the whole matrix, CHAOS_CONFIGS=<name,…> some of it.
const CONFIGS = FAULT_CONFIGS.filter((c) =>
  ONLY === undefined ? CI_FAULT_CONFIG_NAMES.includes(c.name) : ONLY.includes('all') || ONLY.includes(c.name),
);

// A test's clock runs while it waits for a free platform too.
jest.setTimeout(40 * 60_000);

describe('chaos: every job ok after a full drain, under every fault configuration', () => {
  const pool = new ChaosPlatformPool(PLATFORMS, { log: () => undefined });

  afterAll(async () => {
    await pool.stop();
  });

  it.concurrent.each(CONFIGS.map((c) => [c.name, c] as const))(
    'when %s is injected, nothing is lost, duplicated or unexpected',
    async (_name, config) => {
      // Prepare: fast-check draws the fault plans; the seed is printed on failure.
      await fc.assert(
        fc.asyncProperty(faultPlanArbitrary(), async (plan) => {
          // Act
          const result = await pool.use((chaos) =>
            runChaos(chaos, { config, plan, jobs: JOBS, keys: KEYS, logDir: LOG_DIR }),
          );
          // Assess
          const violations = describeViolations(result.verdict);
          if (!result.drained) violations.unshift('the pipeline did not drain before the deadline');
          // A fault that never fired makes the run's "ok" say nothing about it.
          const unfired = unfiredFaults(config, result.faultsFired);
          if (unfired.length > 0) violations.unshift(`never fired, so not tested: ${unfired.join(', ')}`);
          if (violations.length > 0) {
            throw new Error(
              `${config.name} (run ${result.runId}, log ${LOG_DIR}/${config.name}-${result.runId}.log, faults fired ${JSON.stringify(result.faultsFired)}):\n${violations.slice(0, 30).join('\n')}`,
            );
          }
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true, verbose: 1 },
      );
    },
  );
});
