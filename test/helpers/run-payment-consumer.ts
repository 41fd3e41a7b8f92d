/**
 * Runs the deployed payment.capture job module (its handler reads the environment) on one
 * SQS event, in its own process: the chaos tests SIGKILL it at a crash point for real.
 * Usage: node --import tsx test/helpers/run-payment-consumer.ts <event.json> <remaining-ms>
 * Prints the batch response as JSON on stdout when the handler returns.
 */
import { readFileSync } from 'node:fs';
import type { SQSEvent } from 'aws-lambda';
import { lambdaContext } from './sqs-events';

async function main(): Promise<void> {
  const [eventPath, remaining] = process.argv.slice(2);
  if (eventPath === undefined || remaining === undefined) {
    throw new Error('usage: run-payment-consumer.ts <event.json> <remaining-ms>');
  }
  const event = JSON.parse(readFileSync(eventPath, 'utf8')) as SQSEvent;
  const { handler } = await import('../../examples/reference/jobs/payment-capture');
  const response = await handler(event, lambdaContext(Number(remaining)));
  process.stdout.write(`${JSON.stringify(response)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
