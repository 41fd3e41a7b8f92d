/** Names of throwaway resources on the emulator (integration tests, benchmarks). */
import { randomBytes } from 'node:crypto';

// One id per process: names from different runs and different workers never collide.
const RUN_ID = randomBytes(4).toString('hex');
let counter = 0;

/** A short name unique per run and per call, valid for SQS queues and DynamoDB tables ("orders-1a2b3c4d-7"). */
export function uniqueName(prefix: string): string {
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(prefix)) {
    throw new Error(`uniqueName prefix must be 1-40 letters, digits, '-' or '_', got '${prefix}'`);
  }
  counter += 1;
  return `${prefix}-${RUN_ID}-${counter}`;
}

/**
 * The e-mail subscriber the platform adds to every stage's alarms (`-c tenang:alarmEmail`), on top
 * of the declaration's: the app synthesizes without one of its own, and the platform has a
 * subscriber it can confirm. Like any e-mail subscription it stays PendingConfirmation until
 * confirmed (LocalPlatform.confirmSubscriptions); no mail is sent.
 */
export const LOCAL_ALARM_EMAIL = 'alarms@tenang.localhost';
