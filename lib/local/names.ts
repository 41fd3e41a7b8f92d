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
