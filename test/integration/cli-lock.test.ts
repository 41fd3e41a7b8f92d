/**
 * `tenang lock list|release` through the CLI entry point against moto (L4). The CLI finds the
 * locks table through the stage's stack, so each run deploys a one-resource stack (the locks
 * table, named as the app names it) under a stage of its own in the shared moto: no whole
 * platform needed. Leases are written with DynamoDbLockStore at instants relative to the real
 * clock, because the CLI reads the real clock.
 */
import { randomBytes } from 'node:crypto';
import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation';
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { runCaptured, type CapturedRun } from '../../bin/tenang';
import { DynamoDbLockStore } from '../../lib/adapters/aws/dynamodb-lock-store';
import { TABLE_KEYS } from '../../lib/config';
import type { Prompt } from '../../lib/ops/cli-context';
import { dynamoClient, uniqueName } from '../helpers/aws';

jest.setTimeout(60_000);

const MINUTE = 60_000;
// A stage of this run only: its stack and table never meet another test file's.
const STAGE = `lk${randomBytes(4).toString('hex')}`;
const STACK = `tenang-${STAGE}`;
const TABLE = `tenang-${STAGE}-locks`;

let cfn: CloudFormationClient;
let dynamo: DynamoDBClient;
let store: DynamoDbLockStore;
const savedEnv = { ...process.env };

function cli(...argv: string[]): Promise<CapturedRun> {
  return cliWith(undefined, ...argv);
}

function cliWith(prompt: Prompt | undefined, ...argv: string[]): Promise<CapturedRun> {
  return runCaptured(argv, { prompt });
}

/** Puts a lease of `owner` on a fresh resource, acquired `agoMs` ago for `ttlMs`; returns the resource and fence. */
async function hold(
  owner: string,
  agoMs: number,
  ttlMs: number,
): Promise<{ resource: string; fence: number }> {
  const resource = `inventory:${uniqueName('sku')}`;
  const nowMs = Date.now() - agoMs;
  const result = await store.tryAcquire({ resource, ownerToken: owner, nowMs, expiresAtMs: nowMs + ttlMs });
  if (!result.acquired) throw new Error(`could not lock ${resource}`);
  return { resource, fence: result.fence };
}

/** The `lock list --json` entries of the given resources. */
async function listed(
  resources: readonly string[],
  ...flags: string[]
): Promise<{ resource: string; ownerToken: string; fence: number; state: string }[]> {
  const result = await cli('lock', 'list', '--json', ...flags);
  expect(result.code).toBe(0);
  const parsed = JSON.parse(result.out) as {
    table: string;
    locks: { resource: string; ownerToken: string; fence: number; state: string }[];
  };
  expect(parsed.table).toBe(TABLE);
  return parsed.locks.filter((l) => resources.includes(l.resource));
}

beforeAll(async () => {
  // dynamoClient() fails first when the emulator's endpoint is not set: never real AWS.
  dynamo = dynamoClient();
  cfn = new CloudFormationClient({ endpoint: process.env.AWS_ENDPOINT_URL, region: process.env.AWS_REGION });
  await cfn.send(
    new CreateStackCommand({
      StackName: STACK,
      TemplateBody: JSON.stringify({
        Resources: {
          Locks: {
            Type: 'AWS::DynamoDB::Table',
            Properties: {
              TableName: TABLE,
              AttributeDefinitions: [{ AttributeName: TABLE_KEYS.locks.partitionKey, AttributeType: 'S' }],
              KeySchema: [{ AttributeName: TABLE_KEYS.locks.partitionKey, KeyType: 'HASH' }],
              BillingMode: 'PAY_PER_REQUEST',
            },
          },
        },
      }),
    }),
  );
  const status = (await cfn.send(new DescribeStacksCommand({ StackName: STACK }))).Stacks?.[0]?.StackStatus;
  if (status !== 'CREATE_COMPLETE') throw new Error(`stack ${STACK} is ${String(status)}`);
  store = new DynamoDbLockStore(dynamo, TABLE);
  Object.assign(process.env, { TENANG_STAGE: STAGE, TENANG_ACTOR: 'jest' });
});

afterAll(async () => {
  await cfn?.send(new DeleteStackCommand({ StackName: STACK })).catch(() => undefined);
  await dynamo?.send(new DeleteTableCommand({ TableName: TABLE })).catch(() => undefined);
  cfn?.destroy();
  dynamo?.destroy();
  process.env = savedEnv;
});

describe('CLI: tenang lock (moto)', () => {
  describe('Command: lock list', () => {
    it('when a lease is live and another expired unreleased, it shows one live and one orphan', async () => {
      // Prepare
      const live = await hold('owner-live', MINUTE, 10 * MINUTE);
      const orphan = await hold('owner-gone', 20 * MINUTE, 5 * MINUTE);

      // Act
      const table = await cli('lock', 'list');
      const json = await listed([live.resource, orphan.resource]);

      // Assess
      expect(table.code).toBe(0);
      expect(table.out).toContain(`${TABLE}: `);
      const line = (resource: string): string =>
        table.out.split('\n').find((l) => l.startsWith(resource)) ?? '';
      expect(line(live.resource)).toMatch(
        new RegExp(`owner-live\\s+${live.fence}\\s+1m0\\ds ago\\s+in (8m5\\d|9m00)s\\s+live$`),
      );
      expect(line(orphan.resource)).toMatch(
        new RegExp(`owner-gone\\s+${orphan.fence}\\s+20m0\\ds ago\\s+expired 15m0\\ds ago\\s+orphan$`),
      );
      expect(json).toEqual([
        {
          resource: orphan.resource,
          ownerToken: 'owner-gone',
          fence: orphan.fence,
          state: 'orphan',
          acquiredAt: expect.any(String),
          expiresAt: expect.any(String),
        },
        {
          resource: live.resource,
          ownerToken: 'owner-live',
          fence: live.fence,
          state: 'live',
          acquiredAt: expect.any(String),
          expiresAt: expect.any(String),
        },
      ]);
    });

    it('when filtered with --older-than, it keeps only the locks acquired longer ago', async () => {
      // Prepare
      const recent = await hold('owner-recent', MINUTE, 10 * MINUTE);
      const old = await hold('owner-old', 10 * MINUTE, 30 * MINUTE);

      // Act
      const shown = await listed([recent.resource, old.resource], '--older-than', '5m');

      // Assess
      expect(shown.map((l) => l.resource)).toEqual([old.resource]);
    });

    it('when filtered with --orphans, it keeps only the expired leases', async () => {
      // Prepare
      const live = await hold('owner-live', MINUTE, 10 * MINUTE);
      const orphan = await hold('owner-gone', 10 * MINUTE, MINUTE);

      // Act
      const shown = await listed([live.resource, orphan.resource], '--orphans');

      // Assess
      expect(shown.map((l) => [l.resource, l.state])).toEqual([[orphan.resource, 'orphan']]);
    });
  });

  describe('Command: lock release', () => {
    it("when the owner's token is given with --yes, it releases the live lease, keeps the fence, and the next holder gets a higher one", async () => {
      // Prepare
      const { resource, fence } = await hold('owner-stopped', MINUTE, 10 * MINUTE);

      // Act
      const result = await cli('lock', 'release', resource, '--owner', 'owner-stopped', '--yes');
      const after = await store.get(resource);
      const nowMs = Date.now();
      const next = await store.tryAcquire({
        resource,
        ownerToken: 'owner-next',
        nowMs,
        expiresAtMs: nowMs + MINUTE,
      });

      // Assess
      expect(result.code).toBe(0);
      expect(result.out).toContain(
        `released ${resource} (owner owner-stopped, live); fence ${fence} is kept`,
      );
      expect(after).toEqual({ resource, fence, holder: undefined });
      expect(next).toEqual({ acquired: true, fence: fence + 1 });
    });

    it('when the owner token is not the holder, it refuses with 1 naming the current owner and changes nothing', async () => {
      // Prepare
      const { resource } = await hold('owner-real', MINUTE, 10 * MINUTE);
      const before = await store.get(resource);

      // Act
      const result = await cli('lock', 'release', resource, '--owner', 'owner-wrong', '--yes');

      // Assess
      expect(result.code).toBe(1);
      expect(result.err).toMatch(/held by owner-real .*not by owner-wrong/);
      expect(await store.get(resource)).toEqual(before);
    });

    it('when --force meets a live lease, it refuses with 1 saying when it expires, and changes nothing', async () => {
      // Prepare
      const { resource } = await hold('owner-busy', MINUTE, 10 * MINUTE);
      const before = await store.get(resource);
      const expiresAt = new Date(before?.holder?.expiresAtMs ?? 0).toISOString();

      // Act
      const result = await cli('lock', 'release', resource, '--owner', 'owner-busy', '--force', '--yes');

      // Assess
      expect(result.code).toBe(1);
      expect(result.err).toContain(`is live: it expires at ${expiresAt}`);
      expect(result.err).toContain('will expire by itself');
      expect(await store.get(resource)).toEqual(before);
    });

    it('when --force meets an expired lease of that owner, it releases it and keeps the fence', async () => {
      // Prepare
      const { resource, fence } = await hold('owner-crashed', 10 * MINUTE, MINUTE);

      // Act
      const result = await cli(
        'lock',
        'release',
        resource,
        '--owner',
        'owner-crashed',
        '--force',
        '--yes',
        '--json',
      );

      // Assess
      expect(result.code).toBe(0);
      expect(JSON.parse(result.out)).toMatchObject({
        resource,
        outcome: 'released',
        state: 'orphan',
        fence,
        nextFence: fence + 1,
      });
      expect(await store.get(resource)).toEqual({ resource, fence, holder: undefined });
    });

    it('when no terminal can confirm and --yes is missing, it exits 2 and changes nothing', async () => {
      // Prepare
      const { resource } = await hold('owner-crashed', 10 * MINUTE, MINUTE);
      const before = await store.get(resource);

      // Act
      const result = await cli('lock', 'release', resource, '--owner', 'owner-crashed', '--force');

      // Assess
      expect(result.code).toBe(2);
      expect(result.err).toContain('add --yes');
      expect(await store.get(resource)).toEqual(before);
    });

    it('when the operator answers no at the prompt, it changes nothing', async () => {
      // Prepare
      const { resource } = await hold('owner-crashed', 10 * MINUTE, MINUTE);
      const before = await store.get(resource);
      const questions: string[] = [];
      const prompt: Prompt = {
        interactive: true,
        confirm: (q) => {
          questions.push(q);
          return Promise.resolve(false);
        },
      };

      // Act
      const result = await cliWith(
        prompt,
        'lock',
        'release',
        resource,
        '--owner',
        'owner-crashed',
        '--force',
      );

      // Assess
      expect(result.code).toBe(0);
      expect(result.out).toBe('nothing changed');
      expect(questions).toEqual([
        expect.stringContaining(`Release the lock on ${resource} held by owner-crashed`),
      ]);
      expect(await store.get(resource)).toEqual(before);
    });

    it('when it is a dry run, it says what it would release and writes nothing', async () => {
      // Prepare
      const { resource, fence } = await hold('owner-crashed', 10 * MINUTE, MINUTE);
      const before = await store.get(resource);

      // Act
      const result = await cli(
        'lock',
        'release',
        resource,
        '--owner',
        'owner-crashed',
        '--force',
        '--dry-run',
      );

      // Assess
      expect(result.code).toBe(0);
      expect(result.out).toContain(`[dry run: nothing was written] would release ${resource}`);
      expect(result.out).toContain(`next holder would get fence ${fence + 1}`);
      expect(await store.get(resource)).toEqual(before);
    });
  });
});
