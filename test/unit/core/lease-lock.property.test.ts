/**
 * Properties of the lease-lock protocol under any interleaving of acquire / extend / release /
 * expiry / TTL sweep / fenced write by several clients (L1, L3).
 */
import fc from 'fast-check';
import { InMemoryInventoryStore } from '../../../harness/fakes/memory-inventory-store';
import { InMemoryLockStore } from '../../../harness/fakes/memory-lock-store';
import { StaleFencingTokenError } from '../../../lib/core/errors';
import { LeaseLock, LeaseLostError, LockHeldError, type Lease } from '../../../lib/core/lease-lock';
import { manualClock, sequentialTokens } from '../../helpers/manual-clock';

const CLIENTS = 3;
const SKU = 'sku-1';
const RESOURCE = `inventory:${SKU}`;

type Command =
  | { readonly op: 'acquire'; readonly client: number; readonly ttlMs: number }
  | { readonly op: 'extend'; readonly client: number; readonly ttlMs: number }
  | { readonly op: 'release'; readonly client: number }
  | { readonly op: 'write'; readonly client: number }
  | { readonly op: 'advance'; readonly ms: number }
  | { readonly op: 'sweep' };

const client = fc.integer({ min: 0, max: CLIENTS - 1 });
const ttlMs = fc.integer({ min: 1, max: 5_000 });
const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ op: fc.constant('acquire' as const), client, ttlMs }),
  fc.record({ op: fc.constant('extend' as const), client, ttlMs }),
  fc.record({ op: fc.constant('release' as const), client }),
  fc.record({ op: fc.constant('write' as const), client }),
  fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 6_000 }) }),
  fc.constant({ op: 'sweep' as const }),
);

/** What one run observed. */
interface Trace {
  readonly issuedFences: number[];
  /** Every write attempt, in order: its fence and whether the resource accepted it. */
  readonly writes: { fence: number; accepted: boolean }[];
  readonly violations: string[];
}

/** Runs `commands` against one lock store and one protected resource, checking invariants as it goes. */
async function run(commands: readonly Command[]): Promise<Trace> {
  const clock = manualClock();
  const locks = new InMemoryLockStore();
  const inventory = new InMemoryInventoryStore();
  inventory.seed(SKU, 1_000_000);
  const lock = new LeaseLock({ store: locks, clock, newToken: sequentialTokens() });
  /** Each client's latest lease and whether it gave it back. */
  const leases: ({ lease: Lease; released: boolean } | undefined)[] = Array.from(
    { length: CLIENTS },
    () => undefined,
  );
  const trace: Trace = { issuedFences: [], writes: [], violations: [] };
  let order = 0;

  for (const cmd of commands) {
    switch (cmd.op) {
      case 'advance':
        clock.advance(cmd.ms);
        break;
      case 'sweep': {
        // TTL deletes only items whose expiry attribute passed: expired, never-released leases.
        const record = await locks.get(RESOURCE);
        if (record?.holder !== undefined && record.holder.expiresAtMs < clock.ms()) locks.sweep(RESOURCE);
        break;
      }
      case 'acquire': {
        try {
          const lease = await lock.acquire(RESOURCE, cmd.ttlMs);
          // Mutual exclusion: nobody else holds a live lease they have not given back.
          leases.forEach((other, i) => {
            if (
              i !== cmd.client &&
              other !== undefined &&
              !other.released &&
              other.lease.expiresAt.getTime() >= clock.ms()
            ) {
              trace.violations.push(`client ${cmd.client} acquired while client ${i} held a live lease`);
            }
          });
          trace.issuedFences.push(lease.fence);
          leases[cmd.client] = { lease, released: false };
        } catch (error) {
          if (!(error instanceof LockHeldError)) throw error;
        }
        break;
      }
      case 'extend': {
        const held = leases[cmd.client];
        if (held === undefined || held.released) break;
        try {
          held.lease = await lock.extend(held.lease, cmd.ttlMs);
        } catch (error) {
          if (!(error instanceof LeaseLostError)) throw error;
        }
        break;
      }
      case 'release': {
        const held = leases[cmd.client];
        if (held === undefined || held.released) break;
        const before = await locks.get(RESOURCE);
        const owns = before?.holder?.ownerToken === held.lease.ownerToken;
        const result = await lock.release(held.lease);
        const after = await locks.get(RESOURCE);
        if (result.released !== owns)
          trace.violations.push(`release by owner=${owns} answered ${result.released}`);
        if (!owns && JSON.stringify(after) !== JSON.stringify(before)) {
          trace.violations.push('a non-owner release changed the lock record');
        }
        held.released = true;
        break;
      }
      case 'write': {
        const held = leases[cmd.client];
        if (held === undefined) break;
        order += 1;
        try {
          await inventory.reserve({
            sku: SKU,
            orderId: `order-${order}`,
            quantity: 1,
            fence: held.lease.fence,
            at: clock(),
          });
          trace.writes.push({ fence: held.lease.fence, accepted: true });
        } catch (error) {
          if (!(error instanceof StaleFencingTokenError)) throw error;
          trace.writes.push({ fence: held.lease.fence, accepted: false });
        }
        break;
      }
    }
  }
  return trace;
}

describe('Property: lease lock with fencing', () => {
  it('when clients interleave in any order, no write with a stale fence is ever accepted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 80 }), async (commands) => {
        // Act
        const { writes } = await run(commands);

        // Assess: accepted iff newer than every fence accepted before it.
        let newest = -Infinity;
        for (const write of writes) {
          expect(write.accepted).toBe(write.fence > newest);
          if (write.accepted) newest = write.fence;
        }
      }),
      { numRuns: 400 },
    );
  });

  it('when leases come and go (release, expiry, TTL sweep), fences strictly increase per resource', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 80 }), async (commands) => {
        // Act
        const { issuedFences } = await run(commands);

        // Assess
        issuedFences.forEach((fence, i) => {
          if (i > 0) expect(fence).toBeGreaterThan(issuedFences[i - 1] as number);
        });
      }),
      { numRuns: 400 },
    );
  });

  it('when anyone releases, only the owner frees the lock and no two clients hold a live lease at once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 80 }), async (commands) => {
        // Act
        const { violations } = await run(commands);

        // Assess
        expect(violations).toEqual([]);
      }),
      { numRuns: 400 },
    );
  });

  it('when a holder lost its lease and a newer holder wrote, the old holder can never write again', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5_000 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.array(fc.constantFrom('old', 'new'), { minLength: 1, maxLength: 10 }),
        async (ttl, extraDelay, order) => {
          // Prepare
          const clock = manualClock();
          const locks = new InMemoryLockStore();
          const inventory = new InMemoryInventoryStore();
          inventory.seed(SKU, 100);
          const lock = new LeaseLock({ store: locks, clock, newToken: sequentialTokens() });
          const old = await lock.acquire(RESOURCE, ttl);
          clock.advance(ttl + extraDelay);
          const newer = await lock.acquire(RESOURCE, ttl);
          await inventory.reserve({
            sku: SKU,
            orderId: 'new-0',
            quantity: 1,
            fence: newer.fence,
            at: clock(),
          });

          // Act
          const results = await Promise.all(
            order.map((who, i) =>
              who === 'old'
                ? inventory
                    .reserve({ sku: SKU, orderId: `old-${i}`, quantity: 1, fence: old.fence, at: clock() })
                    .then(() => 'accepted')
                    .catch((e: unknown) => (e instanceof StaleFencingTokenError ? 'stale' : 'other'))
                : Promise.resolve('skipped'),
            ),
          );

          // Assess
          expect(results.filter((r) => r === 'accepted' || r === 'other')).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
