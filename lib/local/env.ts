import path from 'node:path';
import { ChildServer } from './child-server';
import { LocalEnvError } from './errors';
import { pollUntil } from './poll';
import { isMoto, isSerializedMoto, MOTO_PROBE_PATH, pingRedis, probeHttp } from './probes';
import { findMotoPython } from './python';
import { findAppDirectory } from './project';

export { LocalEnvError } from './errors';

/** moto's server with DynamoDB requests serialized: real DynamoDB's conditional writes are atomic, stock moto's are not. */
export const MOTO_LAUNCHER = path.join(__dirname, 'moto_server.py');

/** Default moto port when neither `motoPort` nor `TENANG_MOTO_PORT` says otherwise. */
export const DEFAULT_MOTO_PORT = 5055;
/** Default Redis port. */
export const DEFAULT_REDIS_PORT = 6379;
/** Environment variable that moves the local moto to another port. */
export const MOTO_PORT_VARIABLE = 'TENANG_MOTO_PORT';

// One probe of "is something already there?": short, because a free port refuses at once.
const FIRST_PROBE_TIMEOUT_MS = 2000;
const CHILD_STOP_GRACE_MS = 5000;

/** Options of {@link startLocalEnv}. */
export interface LocalEnvOptions {
  /** Port of the local moto. @default TENANG_MOTO_PORT, else 5055 */
  readonly motoPort?: number;
  /** Port of the local Redis. @default 6379 */
  readonly redisPort?: number;
  /** How long each server may take to answer. @default 30000 */
  readonly readinessDeadlineMs?: number;
  /** Progress messages (what was reused, what was started). @default - discarded */
  readonly log?: (line: string) => void;
  /** Project root holding `.venv`. @default - the app of the working directory (its nearest cdk.json), else the working directory */
  readonly projectRoot?: string;
  /** Python command that runs moto. @default - `<projectRoot>/.venv/bin/python` if present, else `python3` */
  readonly python?: string;
  /** Redis server command. @default 'redis-server' */
  readonly redisServer?: string;
  /** When moto is missing, try to install it into `<projectRoot>/.venv` before giving up. @default true */
  readonly installMoto?: boolean;
}

/** A running local environment: where AWS and Redis answer, and how to stop what was started. */
export interface LocalEnv {
  /** AWS endpoint for every service, e.g. `http://localhost:5055`. */
  readonly endpoint: string;
  /** Redis URL, e.g. `redis://127.0.0.1:6379`. */
  readonly redisUrl: string;
  /** AWS region the environment uses. */
  readonly region: string;
  /** Variables to give child processes (AWS_ENDPOINT_URL, AWS_REGION, REDIS_URL, ...). */
  readonly env: Readonly<Record<string, string>>;
  /** Servers this call started, e.g. `['moto', 'redis']`; empty when everything was reused. */
  readonly started: readonly string[];
  /** Stops only the servers this call started (SIGTERM, then SIGKILL); idempotent. */
  stop(): Promise<void>;
}

interface Settings {
  readonly motoPort: number;
  readonly redisPort: number;
  readonly deadlineMs: number;
  readonly log: (line: string) => void;
  readonly projectRoot: string;
  readonly python: string | undefined;
  readonly redisServer: string;
  readonly installMoto: boolean;
}

interface AwsEndpoint {
  readonly url: string;
  /** True for the moto on 127.0.0.1 (started or reused), false for a user-provided AWS_ENDPOINT_URL. */
  readonly local: boolean;
}

/**
 * Makes moto and Redis available, reusing servers that already answer and starting the others.
 * Call `stop()` when done: started servers keep the event loop alive until then, and are killed
 * if the process exits first (the caller turns SIGINT/SIGTERM into an exit).
 */
export async function startLocalEnv(options: LocalEnvOptions = {}): Promise<LocalEnv> {
  const settings = resolveSettings(options);
  const children: ChildServer[] = [];
  const stop = once(() => stopAll(children));
  try {
    const aws = await provideAws(settings, children);
    const redisUrl = await provideRedis(settings, children);
    const region = readEnv('AWS_REGION') ?? readEnv('AWS_DEFAULT_REGION') ?? 'us-east-1';
    return {
      endpoint: aws.url,
      redisUrl,
      region,
      env: childEnv(aws, redisUrl, region),
      started: children.map((child) => child.name),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function resolveSettings(options: LocalEnvOptions): Settings {
  return {
    motoPort: options.motoPort ?? motoPortFromEnv(),
    redisPort: options.redisPort ?? DEFAULT_REDIS_PORT,
    deadlineMs: options.readinessDeadlineMs ?? 30_000,
    log: options.log ?? (() => undefined),
    // The app's directory, never tenang's own: in an app, that is node_modules/tenang.
    projectRoot: options.projectRoot ?? findAppDirectory() ?? process.cwd(),
    python: options.python,
    redisServer: options.redisServer ?? 'redis-server',
    installMoto: options.installMoto ?? true,
  };
}

function motoPortFromEnv(): number {
  const raw = readEnv(MOTO_PORT_VARIABLE);
  if (raw === undefined) return DEFAULT_MOTO_PORT;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new LocalEnvError(`${MOTO_PORT_VARIABLE} must be a port number (1-65535), got '${raw}'.`);
  }
  return port;
}

async function provideAws(settings: Settings, children: ChildServer[]): Promise<AwsEndpoint> {
  const given = readEnv('AWS_ENDPOINT_URL');
  if (given !== undefined) {
    await waitForHttp(given, settings.deadlineMs);
    settings.log(`AWS: using AWS_ENDPOINT_URL ${given}`);
    return { url: given, local: false };
  }
  const port = settings.motoPort;
  // moto's CloudFormation reads template S3 URLs only when they contain "localhost"; Node 20
  // tries every address of localhost (autoSelectFamily), so ::1 first still reaches 127.0.0.1.
  const local: AwsEndpoint = { url: `http://localhost:${port}`, local: true };
  const probeUrl = `http://127.0.0.1:${port}${MOTO_PROBE_PATH}`;
  const found = await probeHttp(probeUrl, FIRST_PROBE_TIMEOUT_MS);
  if (isMoto(found)) {
    settings.log(
      isSerializedMoto(found)
        ? `AWS: reusing moto on port ${port}`
        : `AWS: reusing a stock moto on port ${port}; its concurrent DynamoDB conditional writes and ` +
            `cancelled transactions are not atomic (README, "Known emulator issues"): stop it and let ` +
            `tenang start its own, or start it with python3 ${MOTO_LAUNCHER} -H 127.0.0.1 -p ${port}`,
    );
    return local;
  }
  if (found.kind !== 'refused') {
    throw new LocalEnvError(
      `Port ${port} on 127.0.0.1 is in use by something that is not moto ` +
        `(GET ${MOTO_PROBE_PATH}: ${found.kind === 'answered' ? `HTTP ${found.status}` : found.reason}). ` +
        `Free the port, or choose another with ${MOTO_PORT_VARIABLE}=<port>.`,
    );
  }
  const python = await findMotoPython(settings);
  // moto.server with DynamoDB requests served one at a time (see the launcher's docstring).
  const moto = new ChildServer('moto', python, [MOTO_LAUNCHER, '-H', '127.0.0.1', '-p', String(port)]);
  children.push(moto);
  await waitForChild(moto, `moto on port ${port}`, settings.deadlineMs, async () =>
    isMoto(await probeHttp(probeUrl, FIRST_PROBE_TIMEOUT_MS)),
  );
  settings.log(`AWS: started moto on port ${port} (pid ${moto.pid})`);
  return local;
}

async function provideRedis(settings: Settings, children: ChildServer[]): Promise<string> {
  const given = readEnv('REDIS_URL');
  if (given !== undefined) {
    await pollUntil(async () => ((await pingRedis(given, FIRST_PROBE_TIMEOUT_MS)) ? true : undefined), {
      description: `Redis at REDIS_URL ${given} to answer PING`,
      deadlineMs: settings.deadlineMs,
    });
    settings.log(`Redis: using REDIS_URL ${given}`);
    return given;
  }
  const port = settings.redisPort;
  const url = `redis://127.0.0.1:${port}`;
  if (await pingRedis(url, FIRST_PROBE_TIMEOUT_MS)) {
    settings.log(`Redis: reusing the server on port ${port}`);
    return url;
  }
  const redis = new ChildServer('redis', settings.redisServer, [
    ...['--bind', '127.0.0.1', '--port', String(port)],
    // A throwaway cache: no snapshots, no append-only file.
    ...['--save', '', '--appendonly', 'no'],
  ]);
  children.push(redis);
  await waitForChild(redis, `Redis on port ${port}`, settings.deadlineMs, () =>
    pingRedis(url, FIRST_PROBE_TIMEOUT_MS),
  );
  settings.log(`Redis: started redis-server on port ${port} (pid ${redis.pid})`);
  return url;
}

/** Polls `isReady` until it holds; fails at once, with the child's last output, if the child dies. */
async function waitForChild(
  child: ChildServer,
  description: string,
  deadlineMs: number,
  isReady: () => Promise<boolean>,
): Promise<void> {
  await pollUntil(
    async () => {
      if (child.spawnError?.code === 'ENOENT') throw commandMissingError(child.name);
      const exitReason = child.exitReason;
      if (exitReason !== undefined) {
        throw new LocalEnvError(
          `${child.name} ${exitReason} before it was ready. Its last output:\n${child.outputTail}`,
        );
      }
      return (await isReady()) ? true : undefined;
    },
    { description, deadlineMs },
  );
}

async function waitForHttp(url: string, deadlineMs: number): Promise<void> {
  try {
    new URL(url);
  } catch (error) {
    throw new LocalEnvError(`AWS_ENDPOINT_URL is not a URL: '${url}'.`, { cause: error });
  }
  await pollUntil(
    async () => ((await probeHttp(url, FIRST_PROBE_TIMEOUT_MS)).kind === 'answered' ? true : undefined),
    {
      description: `AWS_ENDPOINT_URL ${url} to answer HTTP`,
      deadlineMs,
    },
  );
}

function commandMissingError(name: string): LocalEnvError {
  if (name === 'redis') {
    return new LocalEnvError(
      'redis-server was not found. Install it (Debian/Ubuntu: apt-get install redis-server; ' +
        'macOS: brew install redis), or set REDIS_URL to a Redis that is already running.',
    );
  }
  return new LocalEnvError(`The command for ${name} was not found.`);
}

function childEnv(aws: AwsEndpoint, redisUrl: string, region: string): Record<string, string> {
  const env: Record<string, string> = {
    AWS_ENDPOINT_URL: aws.url,
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    REDIS_URL: redisUrl,
    // No instance metadata lookups (slow timeouts) when the SDK looks for credentials.
    AWS_EC2_METADATA_DISABLED: 'true',
    // The SDK versions are pinned in the lockfile (releases after early January 2027 need Node 22);
    // its Node 20 notice is noise here.
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  // moto accepts any credentials; only fill them in for our own emulator and never over the user's.
  if (aws.local && readEnv('AWS_ACCESS_KEY_ID') === undefined) {
    env.AWS_ACCESS_KEY_ID = 'testing';
    env.AWS_SECRET_ACCESS_KEY = 'testing';
  }
  return env;
}

async function stopAll(children: readonly ChildServer[]): Promise<void> {
  // Reverse start order: Redis before moto.
  for (const child of [...children].reverse()) await child.stop(CHILD_STOP_GRACE_MS);
}

/** The variable's value, or undefined when it is unset or blank. */
function readEnv(name: string): string | undefined {
  const value = process.env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function once(action: () => Promise<void>): () => Promise<void> {
  let result: Promise<void> | undefined;
  return () => (result ??= action());
}
