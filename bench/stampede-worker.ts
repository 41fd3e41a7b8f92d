/**
 * One process of the multi-process stampede (a stand-in for a group of Lambda instances), forked
 * by bench/cache.ts with an IPC channel: takes its options as JSON from argv, connects, says so,
 * starts reading at the instant the bench sends once every worker is connected, and sends back
 * what measureStampede measured.
 */
import { measureStampede, type StampedeOptions } from '../harness/stampede';
import type { StampedeStartMessage, StampedeWorkerMessage } from './cache';

function tell(message: StampedeWorkerMessage, then: () => void = () => undefined): void {
  if (process.send === undefined)
    throw new Error('stampede-worker runs forked by bench/cache.ts (no IPC channel)');
  process.send(message, () => then());
}

const options = JSON.parse(process.argv[2] ?? '{}') as StampedeOptions;
measureStampede({
  ...options,
  startAt: () =>
    new Promise<number>((resolve) => {
      process.once('message', (message: StampedeStartMessage) => resolve(message.at));
      tell({ kind: 'connected' });
    }),
}).then(
  (result) => tell({ kind: 'result', result }, () => process.exit(0)),
  (error: unknown) => {
    process.stderr.write(String(error));
    process.exit(1);
  },
);
