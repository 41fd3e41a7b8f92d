/**
 * A throwaway redis-server of a test's own, on a free loopback port, for "Redis down" tests: the
 * shared Redis is never stopped or flushed. Stopped by its own pid only.
 */
import { ChildServer } from '../../lib/local/child-server';
import { pollUntil } from '../../lib/local/poll';
import { pingRedis } from '../../lib/local/probes';
import { freePort } from '../../lib/local/ports';

/** A running private Redis. */
export interface OwnRedis {
  readonly port: number;
  readonly url: string;
  /** Stops this server (SIGTERM to its pid); resolves once it is gone. */
  stop(): Promise<void>;
  /** Starts a new server on the same port (after stop). */
  restart(): Promise<OwnRedis>;
}

/** Starts `redis-server` on `port` (a free one by default) and waits until it answers PING. */
export async function startOwnRedis(port?: number): Promise<OwnRedis> {
  const chosen = port ?? (await freePort());
  const url = `redis://127.0.0.1:${chosen}`;
  const child = new ChildServer('own-redis', 'redis-server', [
    ...['--port', String(chosen), '--bind', '127.0.0.1'],
    ...['--save', '', '--appendonly', 'no'],
  ]);
  try {
    await pollUntil(
      async () => {
        if (child.exitReason !== undefined)
          throw new Error(`redis-server ${child.exitReason}: ${child.outputTail}`);
        return (await pingRedis(url, 500)) ? true : undefined;
      },
      { description: `redis-server on port ${chosen}`, deadlineMs: 10_000, intervalMs: 50 },
    );
  } catch (error) {
    await child.stop(1_000);
    throw error;
  }
  return {
    port: chosen,
    url,
    stop: () => child.stop(2_000),
    restart: () => startOwnRedis(chosen),
  };
}
