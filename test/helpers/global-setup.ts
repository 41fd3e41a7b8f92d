/** Jest globalSetup of the integration project: brings up moto and Redis (or reuses them). */
import { startLocalEnv, type LocalEnv } from '../../lib/local/env';

/** Where globalSetup leaves the environment for globalTeardown (both run in Jest's main process). */
export const LOCAL_ENV_KEY = '__tenangLocalEnv__';

/** The slot on globalThis shared by setup and teardown. */
export type LocalEnvSlot = typeof globalThis & { [LOCAL_ENV_KEY]?: LocalEnv };

/** Starts the local environment and copies its variables into process.env, which Jest workers inherit. */
export default async function globalSetup(): Promise<void> {
  const env = await startLocalEnv({ log: (line) => process.stderr.write(`[local] ${line}\n`) });
  Object.assign(process.env, env.env);
  (globalThis as LocalEnvSlot)[LOCAL_ENV_KEY] = env;
}
