/**
 * One local platform for the suites of a test file that use it without changing what it is (its
 * app, its IAM, its alarm clock): they leave flags, mappings, queue attributes and alarms as they
 * found them and work on orders of their own, so each can run after another on the same platform.
 * A platform start (moto, `cdk deploy`, a process per function) is paid once per file, not once
 * per suite. Suites that change the platform (another app, a mutated grant, a faster alarm clock)
 * start their own with startTestPlatform.
 */
import type { LocalPlatform } from '../../lib/local/platform';
import { startTestPlatform } from './local-platform';

/** The shared platform and every line its functions and the platform printed, in order. */
export interface SharedPlatform {
  readonly platform: LocalPlatform;
  readonly lines: string[];
}

/**
 * Starts the platform before the file's first test and stops it after its last; the suites call
 * the getter in their own beforeAll. The environment is restored when the platform stops.
 */
export function useSharedPlatform(): () => SharedPlatform {
  const savedEnv = { ...process.env };
  let shared: SharedPlatform | undefined;
  beforeAll(async () => {
    shared = await startTestPlatform();
  });
  afterAll(async () => {
    await shared?.platform.stop();
    process.env = savedEnv;
  });
  return () => {
    if (shared === undefined) throw new Error('the shared local platform did not start (see beforeAll)');
    return shared;
  };
}
