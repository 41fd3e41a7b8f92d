/**
 * Runbooks (P1, P2, P3): every command a runbook names exists, with the options it uses; every
 * hand-written runbook has the sections an on-call engineer looks for; the generated index and
 * fact pages match the config; every drill of the reference app (tenang's and its own) exists
 * and names a runbook file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildProgram } from '../../../bin/tenang';
import { stageConfig } from '../../../lib/adapters/lambda-env';
import { appDrills, DRILLS } from '../../../lib/drills';
import { appDrillInfos } from '../../../lib/drills/app-drills';
import { DRILL_CATALOG } from '../../../lib/ops/drills/catalog';
import {
  commandProblems,
  runbookCommands,
  shellWords,
  stepInRunbook,
} from '../../../lib/ops/runbook-commands';
import { SQS_MAX_VISIBILITY_SECONDS, permissionHoldSecondsToRedrive } from '../../../lib/core/backoff';
import { RUNBOOK } from '../../../lib/infra/observability';
import {
  GENERATED_MARK,
  generateRunbookFiles,
  handWrittenRunbooks,
  permissionHoldFact,
  span,
} from '../../../lib/ops/runbook-index';

const ROOT = path.join(__dirname, '..', '..', '..');
const RUNBOOKS_DIR = path.join(ROOT, 'runbooks');
/** The reference app's drills: tenang's and its own (the checkout's cdk.json names its extensions). */
const REFERENCE_DRILLS = appDrillInfos(ROOT);
const files = fs.readdirSync(RUNBOOKS_DIR).filter((f) => f.endsWith('.md'));
const read = (file: string): string => fs.readFileSync(path.join(RUNBOOKS_DIR, file), 'utf8');
const program = buildProgram({ out: () => undefined, err: () => undefined });

/** What every hand-written runbook answers (P1). */
const SECTIONS = [
  '## Symptoms and signals',
  '## Blast radius',
  '## Fastest safe mitigation',
  '## When to pause, and when not',
  '## When to flush, and when not',
  '## Recovery',
  '## Return to normal',
  '## Prevention',
  '## Drill',
];

describe('Runbooks', () => {
  describe('Function: shellWords', () => {
    it('when a line quotes an argument, it keeps the quoted words together', () => {
      expect(shellWords('tenang pause x --reason "provider down, INC-1" --for 30m')).toEqual([
        'tenang',
        'pause',
        'x',
        '--reason',
        'provider down, INC-1',
        '--for',
        '30m',
      ]);
    });
  });

  describe('Function: commandProblems', () => {
    it('when a command or an option does not exist, it says which', () => {
      expect(commandProblems(program, ['pause', 'x', '--reasn', 'y'])).toEqual([
        '`tenang pause` has no option --reasn',
      ]);
      expect(commandProblems(program, ['restart', 'x'])).toEqual(['`tenang restart x`: no such command']);
      expect(commandProblems(program, ['dlq'])).toEqual(['`tenang dlq` needs a subcommand']);
      expect(commandProblems(program, ['dlq', 'replay', 'payment.capture', '--dry-run'])).toEqual([]);
    });
  });

  describe('Function: runbookCommands', () => {
    it('when a non-shell block (```text) comes first, the shell blocks after it are still read, and its lines are not', () => {
      const markdown =
        '```text\ntenang not-a-command\n```\n\n```sh\ntenang resume c\n```\n```\ntenang status\n```\n';
      expect(runbookCommands(markdown).map((c) => c.argv)).toEqual([['resume', 'c'], ['status']]);
    });
  });

  describe('Function: stepInRunbook', () => {
    it("when a drill's step uses an option the runbook's command lacks, it does not match", () => {
      const commands = runbookCommands('```sh\ntenang pause c --reason "r" --for 30m\ntenang status\n```\n');
      expect(stepInRunbook(program, ['pause', 'c', '--reason', 'x', '--for', '5s'], commands)).toBe(true);
      expect(stepInRunbook(program, ['status', '--json'], commands)).toBe(true);
      expect(stepInRunbook(program, ['pause', 'c', '--reason', 'x', '--force'], commands)).toBe(false);
      expect(stepInRunbook(program, ['resume', 'c'], commands)).toBe(false);
    });
  });

  it.each(files)('%s: every tenang command it names exists, with its options', (file) => {
    const commands = runbookCommands(read(file));
    // The index only links; every other runbook gives its steps as commands.
    if (file !== 'README.md') expect(commands.length).toBeGreaterThan(0);
    const problems = commands.flatMap((c) =>
      commandProblems(program, c.argv).map((p) => `line ${c.line}: ${p}`),
    );
    expect(problems).toEqual([]);
  });

  it.each(files.filter((f) => !read(f).startsWith(GENERATED_MARK)))(
    '%s (hand-written): answers every question of an incident, in order',
    (file) => {
      const text = read(file);
      const positions = SECTIONS.map((s) => text.indexOf(`\n${s}\n`));
      expect(SECTIONS.filter((_, i) => positions[i] === -1)).toEqual([]);
      expect(positions).toEqual([...positions].sort((a, b) => a - b));
      expect(text).toMatch(/^- \*\*Drill:\*\* `tenang drill [a-z-]+`/m);
    },
  );

  it('when the config is what it is, the generated index and fact pages are the committed ones (npm run runbooks)', () => {
    const generated = generateRunbookFiles(stageConfig('stage', 'us-east-1'), { drills: REFERENCE_DRILLS });
    expect(generated.map((f) => f.file)).toContain('README.md');
    for (const f of generated) expect({ file: f.file, content: read(f.file) }).toEqual(f);
  });

  it('when a runbook is neither generated nor a symptom or alarm runbook, the index would miss it: there is none', () => {
    const generated = new Set(
      generateRunbookFiles(stageConfig('stage', 'us-east-1'), { drills: REFERENCE_DRILLS }).map(
        (f) => f.file,
      ),
    );
    const handWritten = handWrittenRunbooks();
    expect(files.filter((f) => !generated.has(f) && !handWritten.has(f.replace(/\.md$/, '')))).toEqual([]);
  });

  it('when the permission-denied runbook gives each job type its time to the redrive, the figures are what the hold schedule and the config give', () => {
    // Prepare
    const text = read(`${RUNBOOK.permissionDenied}.md`);
    const config = stageConfig('stage', 'us-east-1');

    // Act
    const rows = config.jobTypes.map((j) => {
      const { shortest, longest } = permissionHoldSecondsToRedrive(
        j.maxAttempts,
        SQS_MAX_VISIBILITY_SECONDS - j.visibilityTimeoutSeconds,
      );
      return `| \`${j.name}\` | ${j.maxReceiveCount} | ${span(shortest)} – ${span(longest)} |`;
    });

    // Assess
    expect(rows.filter((row) => !text.includes(row))).toEqual([]);
  });

  it("when a job type's page is generated, it states the permission hold and the alarm leading to its runbook", () => {
    // Prepare
    const config = stageConfig('stage', 'us-east-1');

    // Act
    const pages = new Map(
      generateRunbookFiles(config, { drills: REFERENCE_DRILLS }).map((f) => [f.file, f.content]),
    );

    // Assess
    expect(pages.get('README.md')).toContain(`[${RUNBOOK.permissionDenied}](${RUNBOOK.permissionDenied}.md)`);
    for (const j of config.jobTypes) {
      const page = pages.get(`${j.runbook}.md`) ?? '';
      expect(page).toContain(`| permission denied | ${permissionHoldFact(j)} |`);
      expect(page).toContain(
        `| tenang-<stage>-${j.consumer}-permission-denied | [permission-denied](${RUNBOOK.permissionDenied}.md) |`,
      );
    }
  });

  it('when spans are written, they read as hours, minutes and seconds', () => {
    expect([span(4_650), span(9_300), span(2_250), span(300), span(0)]).toEqual([
      '1 h 17 min 30 s',
      '2 h 35 min',
      '37 min 30 s',
      '5 min',
      '0 s',
    ]);
  });

  it("when a drill is in the catalog, it is implemented and its runbook exists; every hand-written runbook has a drill of the reference app's", () => {
    expect(DRILLS.map((d) => d.name)).toEqual(DRILL_CATALOG.map((d) => d.name));
    expect(appDrills(ROOT).map((d) => d.name)).toEqual(REFERENCE_DRILLS.map((d) => d.name));
    for (const d of REFERENCE_DRILLS) expect(files).toContain(`${d.runbook}.md`);
    expect([...handWrittenRunbooks()].filter((r) => !REFERENCE_DRILLS.some((d) => d.runbook === r))).toEqual(
      [],
    );
  });

  it("when tenang's drills are listed, every one takes any job type and names none of an app's consumers", () => {
    for (const d of DRILL_CATALOG) expect(d).toMatchObject({ anyJobType: true });
    expect(DRILL_CATALOG.flatMap((d) => d.consumers)).toEqual(['flag-reconciler']);
  });
});
