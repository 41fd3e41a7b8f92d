/**
 * The bench's smoke (a benchmark no test runs rots unseen): every section of
 * `npm run bench` at a tiny size against this run's moto and Redis, writing its results.json and
 * REPORT.md into a scratch directory. It checks that each section still produces its figures and
 * that the report renders them; never what they are (timings are the bench's, not a test's).
 * The backlog section, which needs a platform of its own, is rendered from the backlog test's
 * run (test/integration/backlog.test.ts) instead of starting another; the handler-time section
 * starts its own, as nothing else measures handlers side by side in the function host.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runBench, type Results } from '../../bench/run';
import { HANDLER_VARIANTS } from '../../bench/handler-time';
import { referencePipeline } from '../../examples/reference/pipeline';

jest.setTimeout(10 * 60_000);

describe('npm run bench, every section at smoke size', () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-bench-smoke-'));
  const lines: string[] = [];
  let results: Results;
  let report: string;

  beforeAll(async () => {
    results = await runBench({
      only: new Set(['calls', 'bundles', 'cache', 'backoff', 'handler-time']),
      out,
      runs: 1,
      jobs: 1,
      smoke: true,
      log: (line) => lines.push(line),
    });
    report = fs.readFileSync(path.join(out, 'REPORT.md'), 'utf8');
  }, 10 * 60_000);

  afterAll(() => {
    fs.rmSync(out, { recursive: true, force: true });
  });

  it('when the run ends, results.json holds what runBench returned and names the sections measured', () => {
    // Assess
    expect(JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8'))).toEqual(
      JSON.parse(JSON.stringify(results)),
    );
    expect(results.measuredNow).toEqual(['calls', 'bundles', 'cache', 'backoff', 'handler-time']);
  });

  it('when the calls section runs, each consumer has figures for every case', () => {
    // Assess
    const figures = results.calls?.figures ?? [];
    for (const system of ['tenang', 'powertools-baseline'])
      for (const c of ['success', 'duplicate', 'failed-then-retried'])
        expect(figures.filter((f) => f.system === system && f.case === c)).toHaveLength(1);
    expect(figures.every((f) => f.jobs === 1 && f.dynamoDb.perJob > 0)).toBe(true);
  });

  it('when the bundles section runs, every handler has a size and a cold start against its floor, and each reference handler against its by-the-book peer', () => {
    // Assess
    const bundles = results.bundles ?? [];
    expect(bundles.length).toBeGreaterThan(0);
    for (const b of bundles) expect(JSON.stringify(b)).not.toMatch(/null|NaN/);
    // A cold start is the load and then some: each variant's, from the same timing processes.
    for (const b of bundles) {
      expect(b.ready.handler).toBeGreaterThanOrEqual(b.loadMsMedian);
      expect(b.ready.floor).toBeGreaterThanOrEqual(b.floorLoadMsMedian);
      if (b.peer !== undefined) expect(b.peer.readyMs).toBeGreaterThanOrEqual(b.peer.loadMsMedian);
    }
    const peered = bundles.filter((b) => b.peer !== undefined).map((b) => b.handler);
    expect(peered).toEqual(
      expect.arrayContaining(['payment-capture', 'cache-invalidator', 'ingress', 'flag-reconciler']),
    );
  });

  it('when the cache section runs, each protection has figures and warm reads hit', () => {
    // Assess
    expect(results.cache?.stampede.map((s) => s.protection)).toEqual(['none', 'single-flight', 'full']);
    expect(
      results.cache?.stampede.every(
        (s) => Number.isFinite(s.p99Ms) && s.p99Ms > 0 && s.p99MsByRound?.length === 1,
      ),
    ).toBe(true);
    expect(results.cache?.hitReads).toBeGreaterThan(0);
    expect(Number.isFinite(results.cache?.roundTripsPerHit)).toBe(true);
  });

  it("when the cache section is rendered, ours is judged on loader calls, commands per reader and p99 against naive cache-aside's of the same run", () => {
    // Prepare
    const naive = results.cache?.stampede.find((s) => s.protection === 'none');

    // Assess
    expect(report).toMatch(
      /^Ours: \d+ loader call\(s\) \(target 1\): (met|\*\*not met\*\*); \d+\.\d\d Redis commands per reader \(target ≤ 2\): (met|\*\*not met\*\*); p99 \d+ ms against naive cache-aside's (\d+) ms in the same rounds \(target ≤\): (met|\*\*not met\*\*)\. The targets are \*\*(met|not met)\*\*\.$/m,
    );
    expect(report).toContain(`naive cache-aside's ${naive?.p99Ms.toFixed(0)} ms`);
  });

  it('when the backoff section runs, the simulation, the emulator and its model have figures for both protocols', () => {
    // Assess
    const backoff = results.backoff;
    expect(backoff).toBeDefined();
    expect(Object.keys(backoff as object)).toEqual(
      expect.arrayContaining(['simulation', 'emulator', 'emulatorModel']),
    );
    expect(JSON.stringify(backoff)).not.toMatch(/null|NaN/);
  });

  it('when the handler-time section runs, every job type has host and handler times of the three variants', () => {
    // Assess
    const handlerTime = results.handlerTime;
    expect(handlerTime?.unmeasuredJobTypes).toEqual([]);
    expect(handlerTime?.jobs.map((j) => j.jobType)).toEqual(
      referencePipeline('bench', 'us-east-1').jobTypes.map((j) => j.name),
    );
    for (const job of handlerTime?.jobs ?? []) {
      expect(job.variants.map((v) => v.variant)).toEqual([...HANDLER_VARIANTS]);
      for (const v of job.variants) {
        expect(v.handler.count).toBe(handlerTime?.sizes.rounds);
        expect(v.host.count).toBe(handlerTime?.sizes.rounds);
      }
      // The peer and tenang do real work: they send requests; the bare handler sends none.
      for (const v of job.variants)
        expect(Object.keys(v.requestsPerBatch).length > 0).toBe(v.variant !== 'bare');
    }
    expect(JSON.stringify(handlerTime)).not.toMatch(/null|NaN/);
  });

  it('when REPORT.md is written, it has a section for each part measured and no hole in its figures', () => {
    // Assess
    for (const heading of [
      '## DynamoDB and SQS calls per job',
      '## Handler bundles and cold start',
      '## Cache',
      '## Backoff',
      "## The handler's own time per batch",
    ])
      expect(report).toContain(heading);
    expect(report).not.toMatch(/\bNaN\b|\bundefined\b/);
  });
});
