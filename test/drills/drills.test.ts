/**
 * Every drill of the reference app — tenang's (lib/drills) and its own (examples/reference/drills,
 * through its extensions) — on one local platform of its own: each creates its runbook's
 * incident, runs the runbook's `tenang` commands through the CLI entry point, and must recover
 * with nothing lost and nothing done twice. A failure prints the drill's steps and checks.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildProgram, runCaptured } from '../../bin/tenang';
import { runbookCommands, stepInRunbook } from '../../lib/ops/runbook-commands';
import { appDrills } from '../../lib/drills';
import { renderDrillResult, runDrill, type DrillResult } from '../../lib/drills/drill';
import type { LocalPlatform } from '../../lib/local/platform';
import { startTestPlatform } from '../helpers/local-platform';

jest.setTimeout(300_000);

const ROOT = path.join(__dirname, '..', '..');
/** tenang's drills and the reference's own (the checkout's cdk.json names its extensions). */
const DRILLS = appDrills(ROOT);

/** Each drill's time limit: the usual 300 s, or more for a drill that waits out a real hold. */
const DRILL_TIMEOUT_MS = Math.max(300, ...DRILLS.map((d) => d.timeoutSeconds ?? 0)) * 1_000;

/** Where each drill's function and platform output goes (reports/ is not committed). */
const LOG_DIR = path.join(__dirname, '..', '..', 'reports', 'drills');

/** Results by drill, for the last test: every step a drill ran is written in its runbook. */
const results = new Map<string, DrillResult>();

describe('Drills: each runbook executed against its incident', () => {
  let platform: LocalPlatform;
  let lines: string[];
  const savedEnv = { ...process.env };

  beforeAll(async () => {
    ({ platform, lines } = await startTestPlatform());
  });

  afterAll(async () => {
    await platform?.stop();
    process.env = savedEnv;
  });

  it.each(DRILLS.map((d) => [d.name, d.runbook, d]))(
    'drill %s (runbooks/%s.md): recovers with nothing lost and nothing done twice',
    async (_name, _runbook, drill) => {
      // Act
      const firstLine = lines.length;
      const result = await runDrill(drill, {
        platform,
        cli: (argv, env) => runCaptured(argv, { env }),
      });
      results.set(drill.name, result);
      // Everything the functions and the platform printed during the drill, to explain a failure.
      const printed = lines.slice(firstLine);
      fs.mkdirSync(LOG_DIR, { recursive: true });
      fs.writeFileSync(path.join(LOG_DIR, `${drill.name}.log`), `${printed.join('\n')}\n`);

      // Assess
      if (!result.passed) {
        // The flag reconciler prints every few seconds; the other functions' lines explain more.
        const output = printed
          .filter((l) => !l.startsWith(`${platform.functionNamed('flag-reconciler')}:`))
          .slice(-60)
          .join('\n');
        throw new Error(
          `${renderDrillResult(result)}\n\nfull output: ${LOG_DIR}/${drill.name}.log; last lines the functions printed (flag reconciler left out):\n${output}`,
        );
      }
      expect(result.steps.length).toBeGreaterThan(0);
      expect(result.checks.every((c) => c.ok)).toBe(true);
    },
    DRILL_TIMEOUT_MS,
  );

  it('when the drills have run, every step each one ran is a command its runbook names', () => {
    const program = buildProgram({ out: () => undefined, err: () => undefined });
    const missing = [...results.values()].flatMap((r) => {
      const text = fs.readFileSync(path.join(__dirname, '..', '..', 'runbooks', `${r.runbook}.md`), 'utf8');
      const commands = runbookCommands(text);
      return r.steps
        .filter((step) => !stepInRunbook(program, step.argv, commands))
        .map((step) => `runbooks/${r.runbook}.md lacks \`tenang ${step.argv.join(' ')}\``);
    });
    expect(results.size).toBeGreaterThan(0);
    expect(missing).toEqual([]);
  });
});
