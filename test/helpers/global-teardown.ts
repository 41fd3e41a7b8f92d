/** Jest globalTeardown of the integration project: stops what globalSetup started. */
import { LOCAL_ENV_KEY, type LocalEnvSlot } from './global-setup';

/** Stops the servers globalSetup started; servers it reused keep running. */
export default async function globalTeardown(): Promise<void> {
  const slot = globalThis as LocalEnvSlot;
  await slot[LOCAL_ENV_KEY]?.stop();
  delete slot[LOCAL_ENV_KEY];
}
