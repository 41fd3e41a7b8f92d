/**
 * `tenang cache` without Redis or AWS: option parsing and the selector rule, which keys and
 * prefixes the command accepts, the fence versions it plans, the version-bump answer, and the
 * usage errors `run()` returns before touching anything.
 */
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { InvokeCommand, LambdaClient, type InvokeCommandOutput } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { run } from '../../../bin/tenang';
import { cacheKeyspace, entityCacheKey, type CachedEntity } from '../../../lib/core/cache-keys';
import { UsageError } from '../../../lib/ops/cli-context';
import {
  CEILING_VERSION,
  entityOfKey,
  parseEntityRef,
  hotKeyRef,
  invalidationsFor,
  prefixProblem,
  stageNamespace,
} from '../../../lib/core/cache-admin-keys';
import { entityOfStageKey } from '../../../lib/ops/cache/keys';
import { progressPrinter } from '../../../lib/ops/cache/messages';
import { bumpVersionPlan } from '../../../lib/ops/cache/version-bump';
import { CacheFlushOptionsSchema, CacheInvalidateOptionsSchema } from '../../../lib/ops/commands/cache';
import { parseOptions } from '../../../lib/ops/options';

const cfn = mockClient(CloudFormationClient);
const dynamodb = mockClient(DynamoDBClient);
const lambda = mockClient(LambdaClient);
const KEYSPACE = cacheKeyspace('prod');
/** The cached entities as a declaration names them (the reference app's order). */
const ENTITIES: readonly CachedEntity[] = [
  { name: 'order', table: 'orders', key: 'orderId', version: 'version' },
];
const orderCacheKey = (keyspace: typeof KEYSPACE, id: string): string =>
  entityCacheKey(keyspace, 'order', id);

/** Runs the CLI with its own environment: no Redis variables unless given. */
async function cli(
  env: NodeJS.ProcessEnv,
  ...argv: string[]
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(argv, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    env: {
      AWS_REGION: 'eu-west-1',
      TENANG_STAGE: 'unit',
      TENANG_PIPELINE: process.env.TENANG_PIPELINE,
      ...env,
    },
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

beforeEach(() => {
  cfn.reset();
  dynamodb.reset();
  lambda.reset();
});

/** An Invoke answer carrying `payload`, as the Lambda API returns it. */
function invokeOutput(payload: unknown, functionError?: string): InvokeCommandOutput {
  return {
    $metadata: {},
    StatusCode: 200,
    // The SDK wraps the bytes in a blob adapter; the command reads them as bytes.
    Payload: new TextEncoder().encode(JSON.stringify(payload)) as InvokeCommandOutput['Payload'],
    ...(functionError === undefined ? {} : { FunctionError: functionError }),
  };
}

describe('Command: cache', () => {
  describe('Schema: CacheInvalidateOptionsSchema', () => {
    it('when no selector is given, it is a usage error naming the choice', () => {
      // Act
      const parsing = (): unknown => parseOptions(CacheInvalidateOptionsSchema, {});

      // Assess
      expect(parsing).toThrow(UsageError);
      expect(parsing).toThrow('choose exactly one of --key, --entity, --prefix, --bump-version (none given)');
    });

    it('when two selectors are given, it is a usage error naming both', () => {
      expect(() =>
        parseOptions(CacheInvalidateOptionsSchema, { key: 'tenang:prod:v1:order:{1}', bumpVersion: true }),
      ).toThrow('(got --key and --bump-version)');
    });

    it.each([
      [{ key: 'tenang:prod:v1:order:{1}' }, { kind: 'key', key: 'tenang:prod:v1:order:{1}' }],
      [{ entity: 'order:123' }, { kind: 'entity', ref: { entity: 'order', id: '123' } }],
      [{ prefix: 'tenang:prod:v1:order:{12' }, { kind: 'prefix', prefix: 'tenang:prod:v1:order:{12' }],
      [{ bumpVersion: true }, { kind: 'bump-version' }],
    ])('when only %j is given, it selects %j', (raw, selector) => {
      // Act
      const opts = parseOptions(CacheInvalidateOptionsSchema, raw);

      // Assess
      expect(opts).toEqual({
        selector,
        batch: 500,
        dryRun: false,
        json: false,
        direct: false,
        reason: undefined,
        auditLog: undefined,
      });
    });

    it('when --batch, --dry-run and --json are given, they are parsed', () => {
      expect(
        parseOptions(CacheInvalidateOptionsSchema, { prefix: 'p', batch: '100', dryRun: true, json: true }),
      ).toMatchObject({ batch: 100, dryRun: true, json: true });
    });

    it.each([
      ['123', 'is not <entity>:<id>'],
      [`order:${'x'.repeat(1025)}`, 'is not a valid order id: longer than 1024 characters'],
      ['order:', 'the order id is empty'],
    ])('when --entity is %s, it is a usage error: %s', (entity, message) => {
      expect(() => parseOptions(CacheInvalidateOptionsSchema, { entity })).toThrow(message);
    });

    it('when an entity id contains colons, the id is everything after the first one', () => {
      expect(parseOptions(CacheInvalidateOptionsSchema, { entity: 'order:a:b' }).selector).toEqual({
        kind: 'entity',
        ref: { entity: 'order', id: 'a:b' },
      });
    });

    it('when --batch is not a whole number, it is a usage error naming --batch', () => {
      expect(() => parseOptions(CacheInvalidateOptionsSchema, { prefix: 'p', batch: '0' })).toThrow(
        '--batch: must be a whole number',
      );
    });
  });

  describe('Schema: CacheFlushOptionsSchema', () => {
    it('when nothing is given, the confirmation is absent and the batch is 500', () => {
      expect(parseOptions(CacheFlushOptionsSchema, {})).toEqual({ batch: 500 });
    });
  });

  describe('Function: entityOfKey', () => {
    it('when the key is an order key of the keyspace, it returns the order', () => {
      expect(entityOfKey(KEYSPACE, orderCacheKey(KEYSPACE, 'o-1:x'), ENTITIES)).toEqual({
        entity: 'order',
        id: 'o-1:x',
      });
    });

    it.each([
      ['a load lock', `${orderCacheKey(KEYSPACE, 'o-1')}:lock`],
      ['another stage', orderCacheKey(cacheKeyspace('dev'), 'o-1')],
      ['an empty id', orderCacheKey(KEYSPACE, '')],
      ['a foreign key', 'session:abc'],
    ])('when the key is %s, it returns undefined', (_what, key) => {
      expect(entityOfKey(KEYSPACE, key, ENTITIES)).toBeUndefined();
    });
  });

  describe('Function: parseEntityRef', () => {
    it.each([
      ['customer:1', ENTITIES, 'unknown entity "customer"; cached entities: order'],
      ['order:1', [], 'unknown entity "order"; none is declared (stage.cache.entities)'],
    ])('when the reference is %s, it explains why it is not a declared entity', (text, entities, message) => {
      expect(parseEntityRef(entities, text)).toBe(message);
    });

    it('when the entity is declared, it is the reference', () => {
      expect(parseEntityRef(ENTITIES, 'order:a:b')).toEqual({ entity: 'order', id: 'a:b' });
    });
  });

  describe('Function: entityOfStageKey', () => {
    it('when the key is an order key of the stage, it returns the order', () => {
      expect(entityOfStageKey('prod', 'tenang:prod:v1:order:{9}', ENTITIES)).toEqual({
        entity: 'order',
        id: '9',
      });
    });

    it.each([
      ['tenang:dev:v1:order:{9}', "outside stage prod's keyspace"],
      ['tenang:prod:v0:order:{9}', 'not under the current schema version'],
      ['tenang:prod:v1:order:{9}:lock', 'not the key of a cached entity'],
    ])('when the key is %s, it is a usage error: %s', (key, message) => {
      expect(() => entityOfStageKey('prod', key, ENTITIES)).toThrow(UsageError);
      expect(() => entityOfStageKey('prod', key, ENTITIES)).toThrow(message);
    });
  });

  describe('Function: prefixProblem', () => {
    it.each([
      'tenang:prod:v1:order:',
      'tenang:prod:v1:order:{12',
      'tenang:prod:v0:',
      'tenang:prod:v1:order:{1}:lock',
    ])('when the prefix %s is inside the keyspace, it is accepted', (prefix) => {
      expect(prefixProblem('prod', prefix)).toBeUndefined();
    });

    it.each(['tenang:prod', 'tenang:pro', 'tenang:', 'order:', 'tenang:prod2:v1:', 'tenang:dev:v1:order:'])(
      'when the prefix %s is outside the stage keyspace, it is refused',
      (prefix) => {
        expect(prefixProblem('prod', prefix)).toContain("outside stage prod's keyspace");
      },
    );

    it.each(['tenang:prod:', 'tenang:prod:v', 'tenang:prod:v1:'])(
      'when the prefix %s covers the whole keyspace, it is refused as a flush',
      (prefix) => {
        expect(prefixProblem('prod', prefix)).toContain('cache flush --yes-i-know');
      },
    );
  });

  describe('Function: stageNamespace', () => {
    it('when asked for a stage, it is the keyspace without the schema version', () => {
      expect(stageNamespace('prod')).toBe('tenang:prod:');
      expect(cacheKeyspace('prod').prefix.startsWith(stageNamespace('prod'))).toBe(true);
    });
  });

  describe('Function: invalidationsFor', () => {
    it('when the order exists, it fences its key at its current version (as the invalidator does)', () => {
      expect(invalidationsFor(KEYSPACE, { entity: 'order', id: '7' }, 4)).toEqual([
        { key: 'tenang:prod:v1:order:{7}', version: 4 },
      ]);
    });

    it('when the order is gone, it fences its key above every version', () => {
      expect(invalidationsFor(KEYSPACE, { entity: 'order', id: '7' }, undefined)).toEqual([
        { key: 'tenang:prod:v1:order:{7}', version: CEILING_VERSION },
      ]);
    });
  });

  describe('Function: hotKeyRef', () => {
    it.each([
      ['order:42', { entity: 'order', id: '42' }],
      ['tenang:prod:v1:order:{42}', { entity: 'order', id: '42' }],
    ])('when the hot key is %s, it is that entity', (text, ref) => {
      expect(hotKeyRef('prod', text, ENTITIES)).toEqual(ref);
    });

    it.each(['tenang:prod:v1:order:{42}:lock', 'basket:1', '42'])(
      'when the hot key is %s, it explains why it is not one',
      (text) => {
        expect(typeof hotKeyRef('prod', text, ENTITIES)).toBe('string');
      },
    );
  });

  describe('Function: bumpVersionPlan', () => {
    it('when asked, it names the constant, the next namespace and when the old keys expire', () => {
      // Act
      const plan = bumpVersionPlan('prod', { ttlSeconds: 300, ttlJitterRatio: 0.2 });

      // Assess
      expect(plan).toMatchObject({
        constant: 'CACHE_SCHEMA_VERSION',
        file: 'lib/core/cache-keys.ts',
        currentVersion: 'v1',
        nextVersion: 'v2',
        currentPrefix: 'tenang:prod:v1:',
        nextPrefix: 'tenang:prod:v2:',
        oldKeysExpireWithinSeconds: 360,
      });
      expect(plan.steps.join('\n')).toContain('cache invalidate --prefix tenang:prod:v1:');
    });
  });

  describe('Function: progressPrinter', () => {
    it('when batches come faster than the interval, it prints at most once per interval', () => {
      // Prepare
      let now = 0;
      const lines: string[] = [];
      const progress = progressPrinter(
        (t) => lines.push(t),
        () => new Date(now),
        'p',
        1_000,
      );

      // Act
      now = 400;
      progress({ scanned: 500, evicted: 10 });
      now = 1_000;
      progress({ scanned: 1_000, evicted: 20 });
      now = 1_500;
      progress({ scanned: 1_500, evicted: 30 });
      now = 2_100;
      progress({ scanned: 2_000, evicted: 40 });

      // Assess
      expect(lines).toEqual([
        'p: scanned 1000 keys, evicted 20 values so far',
        'p: scanned 2000 keys, evicted 40 values so far',
      ]);
    });
  });

  describe('Function: run (cache)', () => {
    it('when flush has no --yes-i-know, it exits 2 with the origin-load warning and touches nothing', async () => {
      // Act
      const result = await cli({ REDIS_URL: 'redis://127.0.0.1:1' }, 'cache', 'flush');

      // Assess
      expect(result.code).toBe(2);
      expect(result.err).toContain('sends every read to DynamoDB at once');
      expect(result.err).toContain('cache invalidate --entity order:<id>');
      expect(result.err).toContain('--prefix');
      expect(cfn.calls()).toHaveLength(0);
      expect(dynamodb.calls()).toHaveLength(0);
    });

    it('when the cache variables are missing, it exits 2 naming the variables to set', async () => {
      // Act
      const result = await cli({}, 'cache', 'invalidate', '--prefix', 'tenang:unit:v1:order:', '--direct');

      // Assess
      expect(result.code).toBe(2);
      expect(result.err).toContain('CACHE_HOST: is not set');
      expect(lambda.calls()).toHaveLength(0);
      expect(result.err).toContain('REDIS_URL');
      expect(result.err).toContain('CACHE_AUTH=iam');
    });

    it('when the prefix is outside the stage keyspace, it exits 2 before connecting', async () => {
      // Act
      const result = await cli({}, 'cache', 'invalidate', '--prefix', 'tenang:other:v1:');

      // Assess
      expect(result.code).toBe(2);
      expect(result.err).toContain("outside stage unit's keyspace");
    });

    it('when asked to bump the version, it prints the steps, exits 0 and needs no cache', async () => {
      // Act
      const result = await cli({}, 'cache', 'invalidate', '--bump-version', '--json');

      // Assess
      expect(result.code).toBe(0);
      expect(JSON.parse(result.out)).toMatchObject({
        action: 'bump-version',
        written: false,
        nextPrefix: 'tenang:unit:v2:',
      });
    });

    it.each([['invalidate'], ['flush']])(
      'when asked for help on %s, it names the cache-admin function and the --direct path',
      async (sub) => {
        // Act
        const result = await cli({}, 'cache', sub, '--help');

        // Assess
        expect(result.out).toContain('cache-admin function');
        expect(result.out).toContain('lambda:InvokeFunction');
        expect(result.out).toContain('--direct');
        expect(result.out).not.toContain('SSM session');
      },
    );

    it.each([['invalidate'], ['flush']])(
      'when asked for help on %s, it prints examples and exits 0',
      async (sub) => {
        // Act
        const result = await cli({}, 'cache', sub, '--help');

        // Assess
        expect(result.code).toBe(0);
        expect(result.out).toContain('Examples:');
        expect(result.out).toContain('CACHE_AUTH=iam');
        expect(result.out).toContain(`$ tenang --stage prod cache ${sub}`);
      },
    );
  });

  describe('Function: run (cache, through the cache-admin function)', () => {
    let dir: string;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cache-audit-'));
    });
    afterEach(() => {
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const auditLines = (file: string): Record<string, unknown>[] =>
      fs
        .readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);

    it('when a prefix is invalidated, it invokes tenang-unit-cache-admin with the request, prints its result and audits who asked', async () => {
      // Prepare: the SDK reads the credentials from the process's environment.
      const saved = { ...process.env };
      process.env.AWS_ACCESS_KEY_ID = 'AKIAUNITTEST';
      process.env.AWS_SECRET_ACCESS_KEY = 'x';
      const file = path.join(dir, 'audit.jsonl');
      lambda.on(InvokeCommand).resolves(
        invokeOutput({
          status: 'ok',
          operation: 'invalidate-prefix',
          result: { prefix: 'tenang:unit:v1:order:', dryRun: false, scanned: 7, evicted: 3 },
          warnings: [],
        }),
      );

      // Act
      let result: Awaited<ReturnType<typeof cli>>;
      try {
        result = await cli(
          {
            REDIS_URL: 'redis://127.0.0.1:1',
            TENANG_ACTOR: 'alice',
          },
          'cache',
          'invalidate',
          '--prefix',
          'tenang:unit:v1:order:',
          '--reason',
          'stale after deploy',
          '--audit-log',
          file,
          '--json',
        );
      } finally {
        process.env = saved;
      }

      // Assess
      expect(result.code).toBe(0);
      expect(JSON.parse(result.out)).toEqual({
        action: 'invalidate',
        prefix: 'tenang:unit:v1:order:',
        dryRun: false,
        scanned: 7,
        evicted: 3,
      });
      const calls = lambda.commandCalls(InvokeCommand);
      expect(calls).toHaveLength(1);
      const input = calls[0]?.args[0].input;
      expect(input?.FunctionName).toBe('tenang-unit-cache-admin');
      expect(input?.InvocationType).toBe('RequestResponse');
      expect(JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array))).toEqual({
        operation: 'invalidate-prefix',
        prefix: 'tenang:unit:v1:order:',
        batch: 500,
        dryRun: false,
        requestedBy: { actor: 'alice', accessKeyId: 'AKIAUNITTEST', reason: 'stale after deploy' },
      });
      expect(auditLines(file)).toEqual([
        expect.objectContaining({
          stage: 'unit',
          actor: 'alice',
          accessKeyId: 'AKIAUNITTEST',
          reason: 'stale after deploy',
          path: 'invoke',
          target: 'tenang-unit-cache-admin',
          outcome: 'ok',
          summary: { scanned: 7, evicted: 3 },
        }),
      ]);
    });

    it('when the function refuses the request, it exits 1 with its reason and audits the refusal', async () => {
      // Prepare
      const file = path.join(dir, 'audit.jsonl');
      lambda
        .on(InvokeCommand)
        .resolves(invokeOutput({ status: 'refused', message: 'the hot keys cannot be warmed' }));

      // Act
      const result = await cli({}, 'cache', 'flush', '--yes-i-know', '--audit-log', file);

      // Assess
      expect(result.code).toBe(1);
      expect(result.err).toContain('the hot keys cannot be warmed');
      expect(auditLines(file)).toEqual([expect.objectContaining({ outcome: 'refused', path: 'invoke' })]);
    });

    it('when the function fails, it exits 1 naming the error and its log group', async () => {
      // Prepare
      lambda
        .on(InvokeCommand)
        .resolves(
          invokeOutput({ errorType: 'CacheUnavailableError', errorMessage: 'Redis timed out' }, 'Unhandled'),
        );

      // Act
      const result = await cli(
        {},
        'cache',
        'invalidate',
        '--entity',
        'order:o-1',
        '--audit-log',
        path.join(dir, 'a.jsonl'),
      );

      // Assess
      expect(result.code).toBe(1);
      expect(result.err).toContain('CacheUnavailableError: Redis timed out');
      expect(result.err).toContain('/aws/lambda/tenang-unit-cache-admin');
    });

    it('when the function does not exist, it exits 1 saying the stage lacks it', async () => {
      // Prepare
      lambda
        .on(InvokeCommand)
        .rejects(Object.assign(new Error('Function not found'), { name: 'ResourceNotFoundException' }));

      // Act
      const result = await cli(
        {},
        'cache',
        'invalidate',
        '--entity',
        'order:o-1',
        '--audit-log',
        path.join(dir, 'a.jsonl'),
      );

      // Assess
      expect(result.code).toBe(1);
      expect(result.err).toContain('tenang-unit-cache-admin does not exist');
    });
  });
});
