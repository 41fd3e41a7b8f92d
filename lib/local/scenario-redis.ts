/**
 * A scenario's own Redis: a redis-server on a free loopback port, started for the run and handed to
 * the platform through REDIS_URL. The "Redis down" incident stops this process and later starts a
 * new one on the same port (empty, like a replaced ElastiCache node); a Redis the scenario did not
 * start — the machine's on 6379, say — is never touched.
 */
import { ChildServer } from './child-server';
import { LocalEnvError } from './errors';
import { pollUntil } from './poll';
import { freePort } from './ports';
import { pingRedis } from './probes';

const READY_DEADLINE_MS = 10_000;
const STOP_GRACE_MS = 3_000;

/** The scenario's redis-server. */
export class ScenarioRedis {
  private server: ChildServer | undefined;

  private constructor(
    public readonly port: number,
    private readonly command: string,
  ) {}

  /** Starts redis-server on a free port. */
  public static async start(command = 'redis-server'): Promise<ScenarioRedis> {
    const redis = new ScenarioRedis(await freePort(), command);
    await redis.up();
    return redis;
  }

  /** redis://127.0.0.1:<port> */
  public get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Process id while it runs. */
  public get pid(): number | undefined {
    return this.server?.pid;
  }

  /** Whether the server runs now. */
  public get running(): boolean {
    return this.server !== undefined;
  }

  /** Stops the server (SIGTERM, then SIGKILL): clients get connection refused until up(). */
  public async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.stop(STOP_GRACE_MS);
  }

  /** Starts the server on the same port (empty) and waits for PING. */
  public async up(): Promise<void> {
    if (this.server !== undefined) return;
    const server = new ChildServer('redis', this.command, [
      ...['--bind', '127.0.0.1', '--port', String(this.port)],
      // A throwaway cache: no snapshots, no append-only file.
      ...['--save', '', '--appendonly', 'no'],
    ]);
    this.server = server;
    try {
      await pollUntil(
        async () => {
          if (server.spawnError?.code === 'ENOENT') {
            throw new LocalEnvError(
              'redis-server was not found. Install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis).',
            );
          }
          const exit = server.exitReason;
          if (exit !== undefined)
            throw new LocalEnvError(`redis-server on port ${this.port} ${exit}:\n${server.outputTail}`);
          return (await pingRedis(this.url, 1_000)) ? true : undefined;
        },
        { description: `redis-server on port ${this.port}`, deadlineMs: READY_DEADLINE_MS },
      );
    } catch (error) {
      this.server = undefined;
      await server.stop(STOP_GRACE_MS);
      throw error;
    }
  }

  /** Stops it for good. */
  public async stop(): Promise<void> {
    await this.down();
  }
}
