/**
 * An app's runbooks/ (`tenang runbooks`, `tenang init`): which of tenang's pages are copied (the
 * generic ones, not the reference's), the generated index and fact pages linking only to pages the
 * app holds, links into the installed package for the rest, the marks that tell a page tenang
 * wrote from one the team edited, and the plan: create, update, unchanged, kept, --force, --check,
 * orphans. The command's directory rules and output.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCaptured } from '../../../bin/tenang';
import {
  encodePipeline,
  loadPipelineConfig,
  type PipelineConfig,
  type PipelineInput,
} from '../../../lib/config';
import { RUNBOOK } from '../../../lib/infra/observability';
import {
  GENERIC_RUNBOOKS,
  outOfDate,
  planRunbooks,
  relinked,
  runbookPages,
  unedited,
  writeRunbookPlan,
} from '../../../lib/ops/app-runbooks';
import {
  CommandFailedError,
  contextFromEnv,
  UsageError,
  type CliContext,
} from '../../../lib/ops/cli-context';
import { runbooksAppDirectory, runRunbooks } from '../../../lib/ops/commands/runbooks';
import { initDeclaration } from '../../../lib/ops/init/templates';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SHIPPED = path.join(ROOT, 'runbooks');

/** The declaration `tenang init` writes, plus `extra` job types. */
function declaration(extra: PipelineInput['jobTypes'] = []): PipelineInput {
  const base = initDeclaration('dev', 'us-east-1');
  return { ...base, jobTypes: [...base.jobTypes, ...extra] };
}
const configOf = (extra: PipelineInput['jobTypes'] = []): PipelineConfig =>
  loadPipelineConfig(declaration(extra));

/** A second job type, named by `runbook`. */
function jobType(runbook: string): PipelineInput['jobTypes'][number] {
  const [first] = initDeclaration('dev', 'us-east-1').jobTypes;
  if (first === undefined) throw new Error('the init declaration has no job type');
  return {
    ...first,
    name: 'email.welcome',
    consumer: 'welcome-consumer',
    entry: 'jobs/email-welcome.ts',
    runbook,
  };
}

/** Every relative markdown link of `text`. */
const links = (text: string): string[] =>
  [...text.matchAll(/\]\(([^)#]+)(#[^)]*)?\)/g)].map((m) => m[1] ?? '');

describe('App runbooks', () => {
  let work: string;
  let dir: string;

  beforeEach(() => {
    work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-app-runbooks-')));
    dir = path.join(work, 'runbooks');
  });

  afterEach(() => {
    fs.rmSync(work, { recursive: true, force: true });
  });

  describe('Function: runbookPages', () => {
    it("when an app has one job type, it gets tenang's alarm runbooks and stuck-jobs, its index and its job type's page, and not the reference's pages", () => {
      // Act
      const pages = runbookPages(configOf(), { shippedDir: SHIPPED });

      // Assess
      expect(pages.filter((p) => p.kind === 'copied').map((p) => p.file)).toEqual(
        [...Object.values(RUNBOOK), 'stuck-jobs'].map((r) => `${r}.md`),
      );
      expect(pages.filter((p) => p.kind === 'generated').map((p) => p.file)).toEqual([
        'README.md',
        'report-generate.md',
      ]);
      expect(GENERIC_RUNBOOKS).not.toEqual(expect.arrayContaining(['duplicates']));
      for (const p of pages) expect(unedited(p.content)).toBe(true);
    });

    it("when an app's index says how to run every drill, it names the package's CLI, not tenang's checkout script", () => {
      // Act
      const index = runbookPages(configOf(), { shippedDir: SHIPPED }).find((p) => p.file === 'README.md');

      // Assess
      expect(index?.content).toContain('every drill with `npx tenang drill all`');
      expect(index?.content).not.toContain('npm run test:drills');
    });

    it("when pages are written, every link leads to a page of the app's runbooks/ or into the installed package", () => {
      // Act
      const pages = runbookPages(configOf(), { shippedDir: SHIPPED });

      // Assess
      const held = new Set(pages.map((p) => p.file));
      const broken = pages.flatMap((p) =>
        links(p.content)
          .filter((l) => !/^https?:/.test(l))
          .filter((l) =>
            l.startsWith('../node_modules/tenang/')
              ? !fs.existsSync(path.join(ROOT, l.replace('../node_modules/tenang/', '')))
              : !held.has(l),
          )
          .map((l) => `${p.file} → ${l}`),
      );
      expect(broken).toEqual([]);
      // The reference's page a generic one mentions is read in the package, not copied.
      expect(pages.find((p) => p.file === 'stream-failures.md')?.content).toContain(
        '](../node_modules/tenang/runbooks/stale-cache.md)',
      );
      expect(pages.find((p) => p.file === 'README.md')?.content).not.toContain('duplicates.md');
    });

    it("when the app's runbooks/ holds a symptom page of its own, the index links to it", () => {
      // Act
      const pages = runbookPages(configOf(), {
        shippedDir: SHIPPED,
        exists: (name) => name === 'duplicates',
      });

      // Assess
      expect(pages.find((p) => p.file === 'README.md')?.content).toContain('[duplicates](duplicates.md)');
      expect(pages.map((p) => p.file)).not.toContain('duplicates.md');
    });

    it("when a consumer names one of tenang's hand-written pages, that page is copied instead of generated", () => {
      // Act
      const pages = runbookPages(configOf([jobType('stuck-lock')]), { shippedDir: SHIPPED });

      // Assess
      expect(pages.find((p) => p.file === 'stuck-lock.md')?.kind).toBe('copied');
    });

    it('when a link names a page the app holds it is kept, else it leads into the package', () => {
      expect(
        relinked(
          '[a](backlog.md) [b](duplicates.md#blast-radius) [c](../docs/features.md#p1)',
          (p) => p === 'backlog',
        ),
      ).toBe(
        '[a](backlog.md) [b](../node_modules/tenang/runbooks/duplicates.md#blast-radius) [c](../node_modules/tenang/docs/features.md#p1)',
      );
    });
  });

  describe('Function: unedited', () => {
    it('when a page is changed below its mark, it is edited; without a mark it is not one of tenang', () => {
      // Prepare
      const [page] = runbookPages(configOf(), { shippedDir: SHIPPED });
      if (page === undefined) throw new Error('no page');

      // Act & Assess
      expect(unedited(page.content)).toBe(true);
      expect(unedited(`${page.content}\nOur note.\n`)).toBe(false);
      expect(unedited('# Backlog\n')).toBeUndefined();
    });
  });

  describe('Function: planRunbooks', () => {
    it('when the directory is empty, every page is created; once written, every page is unchanged', () => {
      // Act
      const first = planRunbooks(configOf(), dir, { shippedDir: SHIPPED });
      writeRunbookPlan(first);
      const second = planRunbooks(configOf(), dir, { shippedDir: SHIPPED });

      // Assess
      expect(first.pages.every((p) => p.action === 'create')).toBe(true);
      expect(outOfDate(first)).toHaveLength(first.pages.length);
      expect(second.pages.every((p) => p.action === 'unchanged')).toBe(true);
      expect(outOfDate(second)).toEqual([]);
      expect(writeRunbookPlan(second)).toEqual([]);
    });

    it('when a job type is added, its page is created and the index updated; a page the team edited is kept unless --force', () => {
      // Prepare
      writeRunbookPlan(planRunbooks(configOf(), dir, { shippedDir: SHIPPED }));
      const backlog = path.join(dir, 'backlog.md');
      const edited = `${fs.readFileSync(backlog, 'utf8')}\n## Our escalation\nCall the reporting team.\n`;
      fs.writeFileSync(backlog, edited);
      fs.writeFileSync(path.join(dir, 'stuck-jobs.md'), '# Our own stuck jobs page\n');

      // Act
      const plan = planRunbooks(configOf([jobType('email-welcome')]), dir, { shippedDir: SHIPPED });
      writeRunbookPlan(plan);
      const forced = planRunbooks(configOf([jobType('email-welcome')]), dir, {
        shippedDir: SHIPPED,
        force: true,
      });

      // Assess
      const action = (file: string, p = plan): unknown => {
        const page = p.pages.find((x) => x.file === file);
        return { action: page?.action, reason: page?.reason };
      };
      expect(action('email-welcome.md')).toEqual({ action: 'create', reason: undefined });
      expect(action('README.md')).toEqual({ action: 'update', reason: undefined });
      expect(action('backlog.md')).toEqual({ action: 'kept', reason: 'edited by hand' });
      expect(action('stuck-jobs.md')).toEqual({ action: 'kept', reason: 'not written by tenang runbooks' });
      expect(
        outOfDate(plan)
          .map((p) => p.file)
          .sort(),
      ).toEqual(['README.md', 'email-welcome.md']);
      expect(fs.readFileSync(backlog, 'utf8')).toBe(edited);
      expect(fs.readFileSync(path.join(dir, 'README.md'), 'utf8')).toContain(
        '[email-welcome](email-welcome.md)',
      );
      expect(action('backlog.md', forced)).toEqual({ action: 'overwrite', reason: 'edited by hand' });
      expect(action('email-welcome.md', forced)).toEqual({ action: 'unchanged', reason: undefined });
    });

    it('when a job type is removed, its generated page is listed as an orphan and left in place', () => {
      // Prepare
      writeRunbookPlan(planRunbooks(configOf([jobType('email-welcome')]), dir, { shippedDir: SHIPPED }));
      fs.writeFileSync(path.join(dir, 'notes.md'), '# Notes\n');

      // Act
      const plan = planRunbooks(configOf(), dir, { shippedDir: SHIPPED });

      // Assess
      expect(plan.orphans).toEqual(['email-welcome.md']);
      expect(fs.existsSync(path.join(dir, 'email-welcome.md'))).toBe(true);
    });
  });

  describe('Command: tenang runbooks', () => {
    /** An app directory (cdk.json, its own package.json) and a context holding its declaration. */
    function app(): { appDir: string; ctx: CliContext; out: string[] } {
      const appDir = path.join(work, 'my-app');
      fs.mkdirSync(appDir);
      fs.writeFileSync(path.join(appDir, 'cdk.json'), '{"app":"npx tsx app.ts"}');
      fs.writeFileSync(path.join(appDir, 'package.json'), '{"name":"my-app"}');
      const out: string[] = [];
      const ctx = contextFromEnv(
        { stage: 'dev', out: (t) => out.push(t), err: () => undefined },
        { TENANG_PIPELINE: encodePipeline(declaration()), AWS_REGION: 'us-east-1' },
      );
      return { appDir, ctx, out };
    }

    it("when run in a subdirectory of the app, it writes the app's runbooks/ and says what it did", async () => {
      // Prepare
      const { appDir, ctx, out } = app();
      fs.mkdirSync(path.join(appDir, 'jobs'));

      // Act
      const plan = await runRunbooks({ dir: 'runbooks' }, ctx, path.join(appDir, 'jobs'));

      // Assess
      expect(plan.dir).toBe(path.join(appDir, 'runbooks'));
      expect(fs.readdirSync(plan.dir).sort()).toEqual(plan.pages.map((p) => p.file).sort());
      // Outside the working directory, as paths that open from it.
      expect(out.join('\n')).toContain(`wrote     ${path.join(appDir, 'runbooks', 'report-generate.md')}`);
    });

    it('when checked with pages missing, it fails naming them and writes nothing; once written, the check passes', async () => {
      // Prepare
      const { appDir, ctx } = app();

      // Act & Assess
      await expect(runRunbooks({ dir: 'runbooks', check: true }, ctx, appDir)).rejects.toThrow(
        CommandFailedError,
      );
      await expect(runRunbooks({ dir: 'runbooks', check: true }, ctx, appDir)).rejects.toThrow(
        /10 runbook page\(s\) missing or out of date: .*report-generate\.md/,
      );
      expect(fs.existsSync(path.join(appDir, 'runbooks'))).toBe(false);
      await runRunbooks({ dir: 'runbooks' }, ctx, appDir);
      await expect(
        runRunbooks({ dir: 'runbooks', check: true, json: true }, ctx, appDir),
      ).resolves.toMatchObject({
        dir: path.join(appDir, 'runbooks'),
      });
    });

    it("when run outside any app or in tenang's own checkout, it is a usage error saying where to run", () => {
      expect(() => runbooksAppDirectory(work)).toThrow(UsageError);
      expect(() => runbooksAppDirectory(work)).toThrow(/no cdk\.json in .* or above/);
      expect(() => runbooksAppDirectory(ROOT)).toThrow(/in tenang's own checkout, `npm run runbooks`/);
    });

    it('when asked for help, it names its options', async () => {
      // Act
      const { code, out } = await runCaptured(['runbooks', '--help']);

      // Assess
      expect(code).toBe(0);
      for (const option of ['--dir', '--check', '--force', '--json']) expect(out).toContain(option);
    });
  });
});
