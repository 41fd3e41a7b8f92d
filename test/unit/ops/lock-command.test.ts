import { CloudFormationClient, ListStackResourcesCommand } from '@aws-sdk/client-cloudformation';
import {
  DynamoDBClient,
  GetItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { run } from '../../../bin/tenang';
import { InMemoryLockStore } from '../../../harness/fakes/memory-lock-store';
import { CommandFailedError, NO_PROMPT, UsageError, type Prompt } from '../../../lib/ops/cli-context';
import {
  assertConfirmable,
  describeRelease,
  heldLocks,
  LockListOptionsSchema,
  lockTable,
  LockReleaseOptionsSchema,
  releaseLock,
  renderLocks,
  type LockReleaseOptions,
} from '../../../lib/ops/commands/lock';
import { parseOptions } from '../../../lib/ops/options';
import { loadPipelineConfig, TABLE_KEYS, type TableInput } from '../../../lib/config';
import { pipelineInput } from '../config/builders';
import { manualClock, type ManualClock } from '../../helpers/manual-clock';

const RESOURCE = 'inventory:sku-1';
const MINUTE = 60_000;

/** A prompt that answers `answer` and records the questions. */
function answering(answer: boolean): Prompt & { questions: string[] } {
  const questions: string[] = [];
  return {
    interactive: true,
    questions,
    confirm: (question: string) => {
      questions.push(question);
      return Promise.resolve(answer);
    },
  };
}

const release = (over: Partial<LockReleaseOptions> = {}): LockReleaseOptions => ({
  resource: RESOURCE,
  owner: 'owner-1',
  ...over,
});

/** A store holding RESOURCE for owner-1 from now for `ttlMs`. */
async function heldStore(
  clock: ManualClock,
  ttlMs: number,
): Promise<{ store: InMemoryLockStore; fence: number }> {
  const store = new InMemoryLockStore();
  const result = await store.tryAcquire({
    resource: RESOURCE,
    ownerToken: 'owner-1',
    nowMs: clock.ms(),
    expiresAtMs: clock.ms() + ttlMs,
  });
  if (!result.acquired) throw new Error('fixture: could not acquire');
  return { store, fence: result.fence };
}

describe('Command: lock', () => {
  describe('Options', () => {
    it('when --older-than is a duration, it is parsed to milliseconds', () => {
      expect(parseOptions(LockListOptionsSchema, { olderThan: '5m', orphans: true })).toEqual({
        olderThan: 300_000,
        orphans: true,
      });
    });

    it('when --older-than is not a duration, it is a usage error naming the option', () => {
      expect(() => parseOptions(LockListOptionsSchema, { olderThan: '5' })).toThrow(UsageError);
      expect(() => parseOptions(LockListOptionsSchema, { olderThan: '5' })).toThrow(
        /--older-than: must be a duration/,
      );
    });

    it('when release has no --owner, it is a usage error naming --owner', () => {
      expect(() => parseOptions(LockReleaseOptionsSchema, { resource: RESOURCE, force: true })).toThrow(
        /--owner: --owner .* is required/,
      );
    });
  });

  describe('Function: heldLocks', () => {
    const now = new Date('2030-06-01T12:00:00.000Z');
    const at = (minutesAgo: number): number => now.getTime() - minutesAgo * MINUTE;
    const records = [
      {
        resource: 'r-live',
        fence: 7,
        holder: { ownerToken: 'a', fence: 7, acquiredAtMs: at(2), expiresAtMs: at(-8) },
      },
      {
        resource: 'r-orphan',
        fence: 3,
        holder: { ownerToken: 'b', fence: 3, acquiredAtMs: at(20), expiresAtMs: at(10) },
      },
      { resource: 'r-free', fence: 9, holder: undefined },
    ];

    it('when records are held, it marks expired leases orphan and live ones live, oldest first, skipping free records', () => {
      expect(heldLocks(records, now).map((l) => [l.resource, l.state, l.ownerToken, l.fence])).toEqual([
        ['r-orphan', 'orphan', 'b', 3],
        ['r-live', 'live', 'a', 7],
      ]);
    });

    it('when a lease expires exactly now, it is still live (orphans are expired before now)', () => {
      const record = {
        resource: 'r',
        fence: 1,
        holder: { ownerToken: 'c', fence: 1, acquiredAtMs: at(1), expiresAtMs: at(0) },
      };
      expect(heldLocks([record], now)[0]?.state).toBe('live');
    });

    it('when filtered by age, it keeps only locks acquired more than that ago', () => {
      expect(heldLocks(records, now, { olderThanMs: 5 * MINUTE }).map((l) => l.resource)).toEqual([
        'r-orphan',
      ]);
      expect(heldLocks(records, now, { olderThanMs: 2 * MINUTE }).map((l) => l.resource)).toEqual([
        'r-orphan',
      ]);
    });

    it('when filtered to orphans, it keeps only orphans', () => {
      expect(heldLocks(records, now, { orphansOnly: true }).map((l) => l.resource)).toEqual(['r-orphan']);
    });

    it('when rendered, it shows the age, the expiry in the future or the past, and the state', () => {
      const table = renderLocks(heldLocks(records, now), now);
      expect(table).toMatch(/resource\s+owner token\s+fence\s+acquired\s+expires\s+state/);
      expect(table).toMatch(/r-orphan\s+b\s+3\s+20m00s ago\s+expired 10m00s ago\s+orphan/);
      expect(table).toMatch(/r-live\s+a\s+7\s+2m00s ago\s+in 8m00s\s+live/);
    });
  });

  describe('Function: assertConfirmable', () => {
    it('when no one can confirm and neither --yes nor --dry-run is given, it is a usage error asking for --yes', () => {
      expect(() => assertConfirmable({}, NO_PROMPT)).toThrow(UsageError);
      expect(() => assertConfirmable({}, NO_PROMPT)).toThrow(/add --yes/);
    });

    it('when --yes or --dry-run is given, or a person can answer, it lets the release go on', () => {
      expect(() => assertConfirmable({ yes: true }, NO_PROMPT)).not.toThrow();
      expect(() => assertConfirmable({ dryRun: true }, NO_PROMPT)).not.toThrow();
      expect(() => assertConfirmable({}, answering(false))).not.toThrow();
    });
  });

  describe('Function: releaseLock', () => {
    it("when the owner's live lease is released after a yes, it is cleared and the next holder gets a higher fence", async () => {
      // Prepare
      const clock = manualClock();
      const { store, fence } = await heldStore(clock, 10 * MINUTE);
      const prompt = answering(true);

      // Act
      const outcome = await releaseLock(store, release(), { now: clock, prompt });
      const next = await store.tryAcquire({
        resource: RESOURCE,
        ownerToken: 'owner-2',
        nowMs: clock.ms(),
        expiresAtMs: clock.ms() + MINUTE,
      });

      // Assess
      expect(outcome).toMatchObject({ outcome: 'released', state: 'live', fence, nextFence: fence + 1 });
      expect(prompt.questions[0]).toMatch(
        /Release the lock on inventory:sku-1 held by owner-1 .*lease is live/,
      );
      expect(describeRelease(outcome)).toContain(
        `fence ${fence} is kept, so the next holder gets fence ${fence + 1}`,
      );
      expect(next).toEqual({ acquired: true, fence: fence + 1 });
    });

    it('when another owner holds the lease, it refuses naming the current owner and leaves the lease', async () => {
      // Prepare
      const clock = manualClock();
      const { store } = await heldStore(clock, 10 * MINUTE);
      const prompt = answering(true);

      // Act
      const attempt = releaseLock(store, release({ owner: 'someone-else', yes: true }), {
        now: clock,
        prompt,
      });

      // Assess
      await expect(attempt).rejects.toThrow(CommandFailedError);
      await expect(attempt).rejects.toThrow(/held by owner-1 .*not by someone-else/);
      expect((await store.get(RESOURCE))?.holder?.ownerToken).toBe('owner-1');
    });

    it('when --force meets a live lease, it refuses saying when the lease expires and that it expires by itself, without asking', async () => {
      // Prepare
      const clock = manualClock('2030-06-01T12:00:00.000Z');
      const { store } = await heldStore(clock, 10 * MINUTE);
      const prompt = answering(true);

      // Act
      const attempt = releaseLock(store, release({ force: true }), { now: clock, prompt });

      // Assess
      await expect(attempt).rejects.toThrow(
        /is live: it expires at 2030-06-01T12:10:00.000Z \(in 10m00s\) and will expire by itself/,
      );
      expect(prompt.questions).toEqual([]);
      expect((await store.get(RESOURCE))?.holder).toBeDefined();
    });

    it('when --force meets an expired lease of that owner, it releases it', async () => {
      // Prepare
      const clock = manualClock();
      const { store, fence } = await heldStore(clock, MINUTE);
      clock.advance(2 * MINUTE);

      // Act
      const outcome = await releaseLock(store, release({ force: true, yes: true }), {
        now: clock,
        prompt: NO_PROMPT,
      });

      // Assess
      expect(outcome).toMatchObject({ outcome: 'released', state: 'orphan', fence });
      expect(await store.get(RESOURCE)).toEqual({ resource: RESOURCE, fence, holder: undefined });
    });

    it('when the confirmation is answered no, it writes nothing', async () => {
      // Prepare
      const clock = manualClock();
      const { store } = await heldStore(clock, MINUTE);
      clock.advance(2 * MINUTE);

      // Act
      const outcome = await releaseLock(store, release({ force: true }), {
        now: clock,
        prompt: answering(false),
      });

      // Assess
      expect(outcome.outcome).toBe('declined');
      expect(describeRelease(outcome)).toBe('nothing changed');
      expect((await store.get(RESOURCE))?.holder?.ownerToken).toBe('owner-1');
    });

    it('when it is a dry run, it neither asks nor writes and says what would happen', async () => {
      // Prepare
      const clock = manualClock();
      const { store, fence } = await heldStore(clock, MINUTE);
      clock.advance(2 * MINUTE);
      const prompt = answering(true);

      // Act
      const outcome = await releaseLock(store, release({ force: true, dryRun: true }), {
        now: clock,
        prompt,
      });

      // Assess
      expect(outcome.outcome).toBe('would-release');
      expect(describeRelease(outcome)).toMatch(
        /^\[dry run: nothing was written\] would release inventory:sku-1/,
      );
      expect(describeRelease(outcome)).toContain(`next holder would get fence ${fence + 1}`);
      expect(prompt.questions).toEqual([]);
      expect((await store.get(RESOURCE))?.holder?.ownerToken).toBe('owner-1');
    });

    it('when the resource is not held or was never locked, it refuses: nothing to release', async () => {
      // Prepare
      const clock = manualClock();
      const { store } = await heldStore(clock, MINUTE);
      await store.release({ resource: RESOURCE, ownerToken: 'owner-1' });
      const deps = { now: clock, prompt: NO_PROMPT };

      // Act & Assess
      await expect(releaseLock(store, release({ yes: true }), deps)).rejects.toThrow(
        /is not held .*nothing to release/,
      );
      await expect(releaseLock(store, release({ resource: 'never', yes: true }), deps)).rejects.toThrow(
        /no lock record for never/,
      );
    });

    it('when a new owner takes the expired lease while the operator confirms, the write refuses and names the new owner', async () => {
      // Prepare
      const clock = manualClock();
      const { store } = await heldStore(clock, MINUTE);
      clock.advance(2 * MINUTE);
      const prompt: Prompt = {
        interactive: true,
        confirm: async () => {
          await store.tryAcquire({
            resource: RESOURCE,
            ownerToken: 'owner-2',
            nowMs: clock.ms(),
            expiresAtMs: clock.ms() + MINUTE,
          });
          return true;
        },
      };

      // Act
      const attempt = releaseLock(store, release({ force: true }), { now: clock, prompt });

      // Assess
      await expect(attempt).rejects.toThrow(
        /changed while releasing; nothing was released: .*held by owner-2/,
      );
      expect((await store.get(RESOURCE))?.holder?.ownerToken).toBe('owner-2');
    });
  });

  describe('CLI: tenang lock (aws-sdk-client-mock)', () => {
    const cfn = mockClient(CloudFormationClient);
    const dynamo = mockClient(DynamoDBClient);
    const savedEnv = { ...process.env };

    async function cli(
      prompt: Prompt | undefined,
      ...argv: string[]
    ): Promise<{ code: number; out: string; err: string }> {
      const out: string[] = [];
      const err: string[] = [];
      const code = await run(argv, { out: (t) => out.push(t), err: (t) => err.push(t), prompt });
      return { code, out: out.join('\n'), err: err.join('\n') };
    }

    function item(
      owner: string,
      fence: number,
      acquiredAtMs: number,
      expiresAtMs: number,
    ): Record<string, AttributeValue> {
      return {
        resource: { S: RESOURCE },
        owner: { S: owner },
        fence: { N: String(fence) },
        acquiredAt: { N: String(acquiredAtMs) },
        expiresAt: { N: String(expiresAtMs) },
      };
    }

    beforeEach(() => {
      cfn.reset();
      dynamo.reset();
      Object.assign(process.env, { AWS_REGION: 'eu-west-1', TENANG_STAGE: 'unit', TENANG_ACTOR: 'tester' });
      cfn.on(ListStackResourcesCommand).resolves({
        StackResourceSummaries: [
          {
            LogicalResourceId: 'Locks',
            ResourceType: 'AWS::DynamoDB::Table',
            PhysicalResourceId: 'tenang-unit-locks',
            ResourceStatus: 'CREATE_COMPLETE',
            LastUpdatedTimestamp: new Date(),
          },
        ],
      });
    });

    afterAll(() => {
      process.env = savedEnv;
      cfn.restore();
      dynamo.restore();
    });

    it('when release runs without a terminal and without --yes, it exits 2 before reading anything', async () => {
      const result = await cli(undefined, 'lock', 'release', RESOURCE, '--owner', 'owner-1', '--force');
      expect(result.code).toBe(2);
      expect(result.err).toContain('add --yes');
      expect(cfn).not.toHaveReceivedCommand(ListStackResourcesCommand);
      expect(dynamo).not.toHaveReceivedAnyCommand();
    });

    it('when --force meets a live lease, it exits 1 saying when it expires, and writes nothing', async () => {
      // Prepare
      const now = Date.now();
      dynamo.on(GetItemCommand).resolves({ Item: item('owner-1', 42, now - MINUTE, now + 10 * MINUTE) });

      // Act
      const result = await cli(
        undefined,
        'lock',
        'release',
        RESOURCE,
        '--owner',
        'owner-1',
        '--force',
        '--yes',
      );

      // Assess
      expect(result.code).toBe(1);
      expect(result.err).toMatch(
        /error: the lease of owner-1 on inventory:sku-1 \(fence 42\) is live: it expires at .* will expire by itself/,
      );
      expect(dynamo).toHaveReceivedCommandWith(GetItemCommand, { TableName: 'tenang-unit-locks' });
      expect(dynamo).not.toHaveReceivedCommand(UpdateItemCommand);
    });

    it('when --force meets an orphan and --yes is given, it makes the conditional expired-only release', async () => {
      // Prepare
      const now = Date.now();
      dynamo.on(GetItemCommand).resolves({ Item: item('owner-1', 42, now - 10 * MINUTE, now - 5 * MINUTE) });
      dynamo.on(UpdateItemCommand).resolves({});

      // Act
      const result = await cli(
        undefined,
        'lock',
        'release',
        RESOURCE,
        '--owner',
        'owner-1',
        '--force',
        '--yes',
        '--json',
      );

      // Assess
      expect(result.code).toBe(0);
      expect(JSON.parse(result.out)).toMatchObject({
        outcome: 'released',
        state: 'orphan',
        fence: 42,
        nextFence: 43,
      });
      expect(dynamo).toHaveReceivedCommandWith(UpdateItemCommand, {
        TableName: 'tenang-unit-locks',
        ConditionExpression: '#owner = :owner AND #expiresAt < :now',
      });
    });

    it('when listing with --json, it prints every held lock with its state', async () => {
      // Prepare
      const now = Date.now();
      dynamo.on(ScanCommand).resolves({
        Items: [
          item('owner-live', 5, now - MINUTE, now + 9 * MINUTE),
          {
            ...item('owner-gone', 3, now - 20 * MINUTE, now - 10 * MINUTE),
            resource: { S: 'inventory:sku-2' },
          },
        ],
      });

      // Act
      const result = await cli(undefined, 'lock', 'list', '--json');

      // Assess
      expect(result.code).toBe(0);
      const parsed = JSON.parse(result.out) as {
        table: string;
        held: number;
        locks: { ownerToken: string; state: string }[];
      };
      expect(parsed.table).toBe('tenang-unit-locks');
      expect(parsed.held).toBe(2);
      expect(parsed.locks.map((l) => [l.ownerToken, l.state])).toEqual([
        ['owner-gone', 'orphan'],
        ['owner-live', 'live'],
      ]);
    });

    it('when the locks table is not in the stack, it exits 1 naming the table', async () => {
      cfn.on(ListStackResourcesCommand).resolves({
        StackResourceSummaries: [
          {
            LogicalResourceId: 'Orders',
            ResourceType: 'AWS::DynamoDB::Table',
            PhysicalResourceId: 'tenang-unit-orders',
            ResourceStatus: 'CREATE_COMPLETE',
            LastUpdatedTimestamp: new Date(),
          },
        ],
      });
      const result = await cli(undefined, 'lock', 'list');
      expect(result.code).toBe(1);
      expect(result.err).toContain('table tenang-unit-locks is not in stack tenang-unit');
    });

    it('when asked for help on a subcommand, it shows examples and exits 0', async () => {
      for (const sub of ['list', 'release']) {
        const result = await cli(undefined, 'lock', sub, '--help');
        expect(result.code).toBe(0);
        expect(result.out).toContain('Examples:');
        expect(result.out).toContain(`$ tenang lock ${sub}`);
      }
    });
  });
});

describe('Function: lockTable', () => {
  /** An app's own pipeline with `tables` beside its invoices table. */
  const configWith = (...tables: TableInput[]) =>
    loadPipelineConfig(
      pipelineInput({
        tables: [{ name: 'orders', partitionKey: 'orderId', stream: 'NEW_AND_OLD_IMAGES' }, ...tables],
      }),
    );
  const leases = { name: 'leases', ...TABLE_KEYS.locks };

  it('when the pipeline declares one table with the lease-lock layout, it is the one, whatever its name', () => {
    expect(lockTable(configWith(leases, { name: 'claims', ...TABLE_KEYS.dedup }), undefined).name).toBe(
      'leases',
    );
  });

  it('when the pipeline declares none, it fails naming the layout it looks for', () => {
    expect(() => lockTable(configWith({ name: 'claims', ...TABLE_KEYS.dedup }), undefined)).toThrow(
      new CommandFailedError(
        'the pipeline declares no lease-lock table (one with partition key resource, TTL expiresAtEpoch (TABLE_KEYS.locks))',
      ),
    );
  });

  it('when the pipeline declares several, --table picks one, and without it the command asks for it', () => {
    const config = configWith(leases, { name: 'seat-leases', ...TABLE_KEYS.locks });
    expect(lockTable(config, 'seat-leases').name).toBe('seat-leases');
    expect(() => lockTable(config, undefined)).toThrow(
      /several lease-lock tables \(leases, seat-leases\): name one with --table/,
    );
    expect(() => lockTable(config, 'orders')).toThrow(
      /--table orders is not a lease-lock table.*leases, seat-leases/,
    );
  });
});
